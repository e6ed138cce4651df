package agent

import (
	"maps"
	"regexp"
	"slices"

	"github.com/asyncstageout/aso/fts"
)

// pendingJob is a submission whose sid is written: on its way to FTS, or
// whose outcome is unknown (an ambiguous FTS error, a commit that failed).
// It is resolved by looking the job up by its deterministic ID, and sent
// again with the same sid only if FTS has never seen it, so it is never
// submitted twice.
type pendingJob struct {
	job
	sid      string
	endpoint string   // the FTS server the sid goes to ("": the agent's own)
	jobID    string   // known once FTS accepted it or answered 409
	ids      []string // its transfers; files is empty for a job found by sid in the store (PFNs resolved again when needed)
	// found are the files of the job FTS has, by transfer ID, once it is
	// adopted from a status reply; nil for a job FTS just accepted.
	found map[string]fts.FileStatus
	// conflict is FTS's message when it answered the last submission with
	// 409, "" otherwise (see submitter.destinationTaken).
	conflict string
}

func newPendingJob(j job) *pendingJob {
	return &pendingJob{job: j, ids: idsOf(j.files)}
}

// keep takes out of p every transfer but those of ids.
func (p *pendingJob) keep(ids []string) {
	p.ids = ids
	files := p.files[:0:0]
	for _, f := range p.files {
		if slices.Contains(ids, f.id) {
			files = append(files, f)
		}
	}
	p.files = files
}

// write is the ledger's write of p: its sid, endpoint and job ID on its
// files, with the PFNs and file IDs FTS gives for a job adopted from a
// status reply (only the files FTS has).
func (p *pendingJob) write() jobWrite {
	w := jobWrite{sid: p.sid, endpoint: p.endpoint, jobID: p.jobID, files: p.files}
	if p.found != nil {
		w.files = make([]planned, 0, len(p.found))
		for _, id := range p.ids {
			if f, ok := p.found[id]; ok {
				w.files = append(w.files, planned{id: id, src: f.SourceSURL, dst: f.DestSURL, fileID: f.FileID})
			}
		}
	} else if len(w.files) == 0 {
		w.files = make([]planned, len(p.ids))
		for i, id := range p.ids {
			w.files[i] = planned{id: id}
		}
	}
	return w
}

// strays returns the IDs of p's transfers that the job FTS has (p.found)
// does not contain: they were never submitted.
func (p *pendingJob) strays() []string {
	if p.found == nil {
		return nil
	}
	var out []string
	for _, id := range p.ids {
		if _, in := p.found[id]; !in {
			out = append(out, id)
		}
	}
	return out
}

// duplicateEntry finds the key the database refused in FTS's "The
// submission is duplicated" message: MySQL's "Duplicate entry '<key>' for
// key 'dest_surl_uuid'" (the key column's name varies with the server's
// version; the value is the UUID FTS derives from a destination URL).
var duplicateEntry = regexp.MustCompile(`Duplicate entry '([0-9A-Fa-f-]{36})'`)

// collided returns the transfers of p whose destination has the
// dest_surl_uuid that FTS's 409 message names, if any.
func (p *pendingJob) collided() map[string]bool {
	m := duplicateEntry.FindStringSubmatch(p.conflict)
	if m == nil {
		return nil
	}
	busy := map[string]bool{}
	for _, f := range p.files {
		if fts.DestinationUUID(f.dst) == m[1] {
			busy[f.id] = true
		}
	}
	return busy
}

// pendingJobs are the submitter's pending jobs, by sid.
type pendingJobs map[string]*pendingJob

// holding returns the set of transfers the pending jobs hold.
func (ps pendingJobs) holding() map[string]bool {
	m := map[string]bool{}
	for _, p := range ps {
		for _, id := range p.ids {
			m[id] = true
		}
	}
	return m
}

// byEndpoint groups the pending jobs by the endpoint their sid was
// submitted to, endpoints in a stable order.
func (ps pendingJobs) byEndpoint() ([]string, map[string][]*pendingJob) {
	m := map[string][]*pendingJob{}
	for _, p := range ps {
		m[p.endpoint] = append(m[p.endpoint], p)
	}
	return slices.Sorted(maps.Keys(m)), m
}
