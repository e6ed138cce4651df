package ftssim

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// jobTable is the server's job store: the jobs, every file ever received,
// the ids it gives, the destinations in use and the engine that moves files
// on. Its lock guards all of it; a reader advances what it reads to now.
type jobTable struct {
	opts  Options
	start time.Time // real time at creation, for Speed

	mu         sync.Mutex
	eng        engine
	jobs       map[string]*job
	ledger     []*file // every file ever received, also of lost jobs
	nextFileID int64
	// destInUse holds, by dest_surl_uuid, the last file given each one
	// (with CheckDuplicates); FTS clears the column when a file ends.
	destInUse map[string]*file
}

func newJobTable(opts Options) *jobTable {
	return &jobTable{
		opts:       opts,
		start:      time.Now(),
		eng:        engine{opts: opts, failureRate: opts.FailureRate},
		jobs:       map[string]*job{},
		destInUse:  map[string]*file{},
		nextFileID: firstFileID(opts.Seed),
	}
}

// now is the simulated time.
func (jt *jobTable) now() time.Time {
	if jt.opts.Now != nil {
		return jt.opts.Now().UTC()
	}
	el := time.Since(jt.start)
	return jt.start.Add(time.Duration(float64(el) * jt.opts.Speed)).UTC()
}

// lose forgets a job; its files stay in the ledger.
func (jt *jobTable) lose(id string) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	delete(jt.jobs, id)
}

// setFailureRate changes the engine's failure probability.
func (jt *jobTable) setFailureRate(p float64) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	jt.eng.failureRate = p
}

// files lists the ledger, every job advanced to now first.
func (jt *jobTable) files() []SimFile {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	now := jt.now()
	for _, j := range jt.jobs {
		jt.eng.advance(j, now)
	}
	out := make([]SimFile, len(jt.ledger))
	for i, f := range jt.ledger {
		out[i] = f.sim()
	}
	return out
}

// insert stores a built job, refusing a duplicated id (409). Callers hold
// jt.mu.
func (jt *jobTable) insert(j *job) *submitError {
	if _, dup := jt.jobs[j.id]; dup {
		return &submitError{http.StatusConflict, "The sid provided by the user is duplicated"}
	}
	if serr := jt.checkDuplicates(j); serr != nil {
		return serr
	}
	for _, f := range j.files {
		f.id = jt.nextFileID
		f.hashedID = int(mix(uint64(jt.opts.Seed), uint64(f.id)) % (1 << 16))
		jt.nextFileID++
		jt.ledger = append(jt.ledger, f)
	}
	jt.jobs[j.id] = j
	return nil
}

// checkDuplicates is the UNIQUE key on t_file.dest_surl_uuid, which FTS
// fills (uuid5 of BASE_ID and the destination URL) for single-source files
// of the VOs in fts3.CheckDuplicates and clears when a file ends: the
// insert of j's files fails, and the whole job with it, when one of them
// writes a destination an active file writes. The message is FTS's prefix
// followed by the database's error, as the REST server sends it. Callers
// hold jt.mu.
func (jt *jobTable) checkDuplicates(j *job) *submitError {
	if !jt.opts.CheckDuplicates {
		return nil
	}
	now := jt.now()
	mine := map[string]bool{}
	for _, f := range j.files {
		if f.multiSource {
			continue // several sources: no dest_surl_uuid
		}
		key := DestinationUUID(f.destSURL)
		busy := false
		if holder := jt.destInUse[key]; holder != nil && jt.jobs[holder.job.id] == holder.job {
			jt.eng.advance(holder.job, now)
			busy = !isTerminal(holder.state) // an archived (lost) job holds nothing
		}
		if mine[key] || busy {
			return &submitError{http.StatusConflict, fmt.Sprintf(
				"The submission is duplicated (MySQLdb.IntegrityError) (1062, \"Duplicate entry '%s' for key 'dest_surl_uuid'\")", key)}
		}
		mine[key] = true
	}
	for _, f := range j.files {
		if !f.multiSource {
			jt.destInUse[DestinationUUID(f.destSURL)] = f
		}
	}
	return nil
}

// firstFileID is where file ids start: a large integer, as on a server
// that has run for years, drawn from the seed.
func firstFileID(seed int64) int64 {
	return 1_000_000_000 + int64(mix(uint64(seed), 0xf11e)%1_000_000_000)
}

// sortedJobs returns the live jobs by submission time.
func (jt *jobTable) sortedJobs() []*job {
	out := make([]*job, 0, len(jt.jobs))
	for _, j := range jt.jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].submitTime.Equal(out[b].submitTime) {
			return out[a].submitTime.Before(out[b].submitTime)
		}
		return out[a].files[0].id < out[b].files[0].id
	})
	return out
}
