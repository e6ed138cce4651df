package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// ledger is the agent's bookkeeping, with one owner: the transfers the
// agent holds (claimed, not yet committed), each with its current revision,
// and the jobs whose submission is pending. Every write that carries the
// revision of a held transfer (hold, prepare, commit, release, abort,
// renew) is made by the ledger itself under its one mutex, so the submit
// path and the lease keeper never write with a stale revision, and no
// caller ever holds its lock.
type ledger struct {
	store Store
	multi state.MultiSubmitter // the store's, or state.MultiOf's adapter

	mu   sync.Mutex
	held map[string]*state.Transfer
	// pending are jobs whose submission outcome is not known yet (an
	// ambiguous FTS error) or whose commit failed, by sid.
	pending map[string]*pendingJob
}

func newLedger(store Store, multi state.MultiSubmitter) *ledger {
	return &ledger{store: store, multi: multi, held: map[string]*state.Transfer{}, pending: map[string]*pendingJob{}}
}

// hold keeps the transfers of ts, just claimed, in place: the caller gives
// ts up (it lives on while any of its transfers is held).
func (l *ledger) hold(ts []state.Transfer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range ts {
		l.held[ts[i].ID] = &ts[i]
	}
}

// get returns copies of the held transfers among ids, in order, skipping
// those no longer held.
func (l *ledger) get(ids []string) []state.Transfer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.getLocked(ids)
}

func (l *ledger) getLocked(ids []string) []state.Transfer {
	out := make([]state.Transfer, 0, len(ids))
	for _, id := range ids {
		if t, ok := l.held[id]; ok {
			out = append(out, *t)
		}
	}
	return out
}

// byID returns copies of the held transfers among ids, by ID.
func (l *ledger) byID(ids []string) map[string]state.Transfer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]state.Transfer, len(ids))
	for _, id := range ids {
		if t, ok := l.held[id]; ok {
			out[id] = *t
		}
	}
	return out
}

// countLinks adds the held transfers to m, per link.
func (l *ledger) countLinks(m map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.held {
		m[t.Link()]++
	}
}

// unsubmitted returns the IDs of the held transfers that carry no sid:
// no submission of theirs can have reached FTS.
func (l *ledger) unsubmitted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for _, t := range l.held {
		if t.SubmitSID == "" {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// toSubmit returns the held transfers that have no submission yet. Held
// transfers that carry a sid no pending job knows (claimed again after a
// crash between submission and commit) join the pending job of their sid,
// to be looked up in FTS; they are returned in found.
func (l *ledger) toSubmit() (fresh, found []state.Transfer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	inPending := map[string]bool{}
	for _, p := range l.pending {
		for _, id := range p.ids {
			inPending[id] = true
		}
	}
	fresh = make([]state.Transfer, 0, len(l.held))
	for _, t := range l.held {
		switch {
		case inPending[t.ID]:
		case t.SubmitSID != "":
			p := l.pending[t.SubmitSID]
			if p == nil {
				p = &pendingJob{sid: t.SubmitSID, endpoint: t.FTSEndpoint, prio: ftsPriority(t.Priority)}
				l.pending[t.SubmitSID] = p
			}
			p.ids = append(p.ids, t.ID)
			inPending[t.ID] = true
			found = append(found, *t)
		default:
			fresh = append(fresh, *t)
		}
	}
	return fresh, found
}

// pendingJobs returns the pending jobs.
func (l *ledger) pendingJobs() []*pendingJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*pendingJob, 0, len(l.pending))
	for _, p := range l.pending {
		out = append(out, p)
	}
	return out
}

// npending is the number of pending jobs.
func (l *ledger) npending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// forget drops the pending job of sid (its transfers stay held).
func (l *ledger) forget(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, sid)
}

// prepare writes the sid (and endpoint) of each job on its held transfers,
// ahead of the submission. A job keeps the transfers that were written and
// becomes pending; ready are the jobs that kept any, lost the items found
// no longer ours. An error means nothing is known to be written.
func (l *ledger) prepare(ctx context.Context, jobs []*pendingJob) (ready []*pendingJob, lost []state.Result, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make([][]state.Transfer, len(jobs))
	preps := make([]state.PrepareJob, len(jobs))
	for k, j := range jobs {
		held[k] = l.getLocked(j.ids)
		preps[k] = state.PrepareJob{Transfers: held[k], SID: j.sid, Endpoint: j.endpoint}
	}
	res, err := l.multi.PrepareSubmits(ctx, preps)
	if err != nil {
		return nil, nil, err
	}
	for k, j := range jobs {
		if k >= len(res) {
			break
		}
		ok, l2 := l.update(len(held[k]), res[k], func(t *state.Transfer) { t.SubmitSID, t.FTSEndpoint = j.sid, j.endpoint })
		lost = append(lost, l2...)
		if len(ok) == 0 {
			continue
		}
		keep := make(map[string]bool, len(ok))
		for _, id := range ok {
			keep[id] = true
		}
		j.files = filterPlanned(j.files, keep)
		j.ids = j.ids[:0]
		for _, f := range j.files {
			j.ids = append(j.ids, f.id)
		}
		l.pending[j.sid] = j
		ready = append(ready, j)
	}
	return ready, lost, nil
}

// jobCommit is what the commit of one job did.
type jobCommit struct {
	job   *pendingJob
	links []string       // of the transfers committed
	lost  []state.Result // items found no longer ours
}

// commit records each job's FTS job ID on its held transfers, which are
// then no longer held, and forgets the job. For a job adopted from an FTS
// status reply (job.found), only the transfers FTS has are committed, with
// the PFNs and file IDs FTS gives (release the others first: strays). A job
// none of whose transfers is held any more is forgotten. An error means
// nothing is known to be written: the jobs stay pending.
func (l *ledger) commit(ctx context.Context, jobs []*pendingJob) ([]jobCommit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var list []*pendingJob
	var cjobs []state.CommitJob
	for _, j := range jobs {
		commits := l.commitsOf(j)
		if len(commits) == 0 {
			delete(l.pending, j.sid)
			continue
		}
		list = append(list, j)
		cjobs = append(cjobs, state.CommitJob{Commits: commits, JobID: j.jobID})
	}
	if len(cjobs) == 0 {
		return nil, nil
	}
	res, err := l.multi.SetTransferIDs(ctx, cjobs)
	if err != nil {
		return nil, err
	}
	out := make([]jobCommit, 0, len(list))
	for k, j := range list {
		if k >= len(res) {
			break
		}
		ok, lost := l.update(len(cjobs[k].Commits), res[k], nil)
		c := jobCommit{job: j, lost: lost, links: make([]string, 0, len(ok))}
		for _, id := range ok {
			c.links = append(c.links, l.held[id].Link())
			delete(l.held, id)
		}
		delete(l.pending, j.sid)
		out = append(out, c)
	}
	return out, nil
}

// commitsOf returns the commits of j's held transfers (see commit).
func (l *ledger) commitsOf(j *pendingJob) []state.Commit {
	pfn := make(map[string]*planned, len(j.files))
	for i := range j.files {
		pfn[j.files[i].id] = &j.files[i]
	}
	commits := make([]state.Commit, 0, len(j.ids))
	for _, id := range j.ids {
		t, ok := l.held[id]
		if !ok {
			continue
		}
		c := state.Commit{Transfer: *t}
		if p := pfn[t.ID]; p != nil {
			c.SourcePFN, c.DestPFN = p.src, p.dst
		}
		if j.found != nil {
			f, ok := j.found[t.ID]
			if !ok {
				continue // a stray: never submitted
			}
			c.SourcePFN, c.DestPFN, c.FileID = f.SourceSURL, f.DestSURL, f.FileID
		}
		commits = append(commits, c)
	}
	return commits
}

// strays returns the IDs of j's held transfers that the job FTS has
// (j.found) does not contain: they were never submitted.
func (l *ledger) strays(j *pendingJob) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range j.ids {
		if _, ok := l.held[id]; ok && j.found != nil {
			if _, in := j.found[id]; !in {
				out = append(out, id)
			}
		}
	}
	return out
}

// release returns the held transfers among ids to new without penalty
// (their sid is cleared) and lets them go. Shutdown (the transfers never
// submitted) and a job FTS never accepted both end here.
func (l *ledger) release(ctx context.Context, ids []string, reason string) ([]state.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.getLocked(ids)
	if len(ts) == 0 {
		return nil, nil
	}
	aborts := make([]state.Abort, len(ts))
	for i, t := range ts {
		aborts[i] = state.Abort{Transfer: t, Reason: reason, NoPenalty: true}
	}
	res, err := l.store.AbortTransfers(ctx, aborts)
	if err != nil {
		l.forgetLocked(aborts)
	}
	for _, r := range res {
		delete(l.held, r.ID)
	}
	return res, err
}

// forgetLocked lets go of the transfers of aborts, whose write failed: it
// may have landed (its answer lost), so the held copies, sid and revision
// included, may be stale, and a stale sid must never be looked up and sent
// again. Those still ours come back through a claim once their leases
// expire, read anew from the store.
func (l *ledger) forgetLocked(aborts []state.Abort) {
	for _, ab := range aborts {
		delete(l.held, ab.Transfer.ID)
	}
}

// abort ends the held transfers of aborts without a job (with their
// current revisions), and lets them go. It returns the aborts written, in
// the order of the results.
func (l *ledger) abort(ctx context.Context, aborts []state.Abort) ([]state.Abort, []state.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := aborts[:0:0]
	for _, ab := range aborts {
		if t, ok := l.held[ab.Transfer.ID]; ok {
			ab.Transfer = *t
			list = append(list, ab)
		}
	}
	res, err := l.store.AbortTransfers(ctx, list)
	if err != nil {
		l.forgetLocked(list)
		return list, nil, err
	}
	for _, r := range res {
		delete(l.held, r.ID)
	}
	return list, res, nil
}

// renew extends the leases of every held transfer. It returns the earliest
// of the new expiries, as the store wrote them (zero when nothing is
// held), and the items found no longer ours (let go).
func (l *ledger) renew(ctx context.Context) (time.Time, []state.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) == 0 {
		return time.Time{}, nil, nil
	}
	ts := make([]state.Transfer, 0, len(l.held))
	for _, t := range l.held {
		ts = append(ts, *t)
	}
	res, err := l.store.RenewLeases(ctx, ts)
	if err != nil {
		return time.Time{}, nil, err
	}
	ok, lost := l.update(len(ts), res, nil)
	var until time.Time
	for _, id := range ok {
		if exp := l.held[id].LeaseExpires.Time; until.IsZero() || exp.Before(until) {
			until = exp
		}
	}
	return until, lost, nil
}

// update applies the results of a write of n items: successful items get
// their new revision and lease, as the store wrote them (and the change
// made by mutate, if any); items that failed with ErrLeaseLost are let go.
// It returns the IDs of the successful ones. l.mu is held.
func (l *ledger) update(n int, res []state.Result, mutate func(*state.Transfer)) (ok []string, lost []state.Result) {
	ok = make([]string, 0, len(res))
	for i, r := range res {
		if i >= n {
			break
		}
		t, held := l.held[r.ID]
		switch {
		case r.Err == nil && held:
			t.Rev, t.LeaseExpires = r.Rev, r.LeaseExpires
			if mutate != nil {
				mutate(t)
			}
			ok = append(ok, r.ID)
		case errors.Is(r.Err, state.ErrLeaseLost):
			delete(l.held, r.ID)
			lost = append(lost, r)
		}
	}
	return ok, lost
}
