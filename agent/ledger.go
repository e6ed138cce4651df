package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// ledger is what this agent holds, in one place: the transfers it claimed
// and has not committed (each at its current revision), the transfers it
// claimed this run and has not yet seen end (for the drain check), and its
// submitted transfers per link (for the link cap). Every write that
// carries the revision of a held transfer (prepare, commit, release,
// abort, renew) is made by the ledger itself under its one mutex, so the
// submitter and the lease keeper never write with a stale revision, and
// no caller ever holds its lock.
type ledger struct {
	store Store

	mu   sync.Mutex
	held map[string]*state.Transfer
	// unsettled are the transfers claimed this run that no write or read
	// has shown terminal yet.
	unsettled map[string]struct{}
	links     linkCounts
}

func newLedger(store Store) *ledger {
	return &ledger{store: store, held: map[string]*state.Transfer{}, unsettled: map[string]struct{}{}}
}

// planned is a transfer of a job, with its PFNs and, once FTS has the job,
// its file ID there.
type planned struct {
	id, src, dst string
	fileID       int64
}

// jobWrite is the write of one job's sid (prepare) or FTS job ID (commit)
// on its held transfers.
type jobWrite struct {
	sid, endpoint, jobID string
	files                []planned
}

// hold keeps the transfers of ts, just claimed, in place: the caller gives
// ts up (it lives on while any of its transfers is held).
func (l *ledger) hold(ts []state.Transfer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range ts {
		l.held[ts[i].ID] = &ts[i]
		l.unsettled[ts[i].ID] = struct{}{}
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

// toSubmit returns the held transfers that no pending job holds (pending
// says which): fresh ones without a sid, and found ones carrying a sid
// (claimed again after a crash between submission and commit: their job
// is to be looked up in FTS).
func (l *ledger) toSubmit(pending func(id string) bool) (fresh, found []state.Transfer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh = make([]state.Transfer, 0, len(l.held))
	for _, t := range l.held {
		switch {
		case pending(t.ID):
		case t.SubmitSID != "":
			found = append(found, *t)
		default:
			fresh = append(fresh, *t)
		}
	}
	return fresh, found
}

// prepare writes each job's sid and endpoint on its held transfers, in
// one write, with the record that each owns its destination (since now)
// on those that have none yet. ok[k] are the IDs of job k written; lost
// the items found no longer ours (let go). An error means nothing is
// known to be written.
func (l *ledger) prepare(ctx context.Context, jobs []jobWrite, now time.Time) (ok [][]string, lost []state.Result, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	owned := state.At(now)
	own := func(t *state.Transfer) {
		if t.DestOwnedSince.IsZero() {
			t.DestOwnedSince = owned
		}
	}
	preps := make([]state.PrepareJob, len(jobs))
	for k, j := range jobs {
		preps[k] = state.PrepareJob{Transfers: l.getLocked(idsOf(j.files)), SID: j.sid, Endpoint: j.endpoint}
		for i := range preps[k].Transfers {
			own(&preps[k].Transfers[i]) // the write carries it: the next one, of this copy, keeps it
		}
	}
	res, err := l.store.PrepareSubmits(ctx, preps)
	if err != nil {
		return nil, nil, err
	}
	ok = make([][]string, len(jobs))
	for k := range res {
		if k >= len(jobs) {
			break
		}
		j := jobs[k]
		var lk []state.Result
		ok[k], lk = l.update(len(preps[k].Transfers), res[k], func(t *state.Transfer) {
			t.SubmitSID, t.FTSEndpoint = j.sid, j.endpoint
			own(t)
		})
		lost = append(lost, lk...)
	}
	return ok, lost, nil
}

// commit records each job's FTS job ID, and the PFNs and file IDs of its
// files, on its held transfers, in one write; those written are no longer
// held, and count as submitted on their links. ok[k] are the IDs of job k
// committed; lost the items found no longer ours. An error means nothing
// is known to be written.
func (l *ledger) commit(ctx context.Context, jobs []jobWrite) (ok [][]string, lost []state.Result, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok = make([][]string, len(jobs))
	var cjobs []state.CommitJob
	var of []int // the job of each of cjobs
	for k, j := range jobs {
		cs := make([]state.Commit, 0, len(j.files))
		for _, f := range j.files {
			if t, held := l.held[f.id]; held {
				cs = append(cs, state.Commit{Transfer: *t, SourcePFN: f.src, DestPFN: f.dst, FileID: f.fileID})
			}
		}
		if len(cs) > 0 {
			cjobs, of = append(cjobs, state.CommitJob{Commits: cs, JobID: j.jobID}), append(of, k)
		}
	}
	if len(cjobs) == 0 {
		return ok, nil, nil
	}
	res, err := l.store.SetTransferIDs(ctx, cjobs)
	if err != nil {
		return nil, nil, err
	}
	for i := range res {
		if i >= len(cjobs) {
			break
		}
		k := of[i]
		var lk []state.Result
		ok[k], lk = l.update(len(cjobs[i].Commits), res[i], nil)
		lost = append(lost, lk...)
		for _, id := range ok[k] {
			l.links.committed(l.held[id].Link())
			delete(l.held, id)
		}
	}
	return ok, lost, nil
}

// release returns the held transfers among ids to new without penalty
// (their sid is cleared) and lets them go.
func (l *ledger) release(ctx context.Context, ids []string, reason string) ([]state.Result, error) {
	ts := l.get(ids)
	if len(ts) == 0 {
		return nil, nil
	}
	aborts := make([]state.Abort, len(ts))
	for i, t := range ts {
		aborts[i] = state.Abort{Transfer: t, Reason: reason, NoPenalty: true}
	}
	_, res, err := l.abort(ctx, aborts)
	return res, err
}

// abort ends the held transfers of aborts without a job (with their
// current revisions), and lets them go. It returns the aborts written, in
// the order of the results. A write that failed may have landed (its
// answer lost), so the held copies, sid and revision included, may be
// stale: they are let go too, and a stale sid is never looked up and sent
// again; those still ours come back through a claim once their leases
// expire, read anew from the store.
func (l *ledger) abort(ctx context.Context, aborts []state.Abort) ([]state.Abort, []state.Result, error) {
	return endHeld(l, aborts, func(ab *state.Abort) *state.Transfer { return &ab.Transfer }, func(list []state.Abort) ([]state.Result, error) {
		return l.store.AbortTransfers(ctx, list)
	})
}

// finish records the outcomes terms of held transfers that never had a
// job (with their current revisions), in one write, and lets them go, as
// abort does. The results are in the order of the terms written (those no
// longer held left out).
func (l *ledger) finish(ctx context.Context, terms []state.Terminal) ([]state.Terminal, []state.Result, error) {
	return endHeld(l, terms, func(tm *state.Terminal) *state.Transfer { return &tm.Transfer }, func(list []state.Terminal) ([]state.Result, error) {
		return l.store.SetTerminalState(ctx, list)
	})
}

// endHeld writes items, each ending a held transfer (transfer gives it,
// replaced by its held copy: the current revision), and lets them go
// whether the write went through or not (see abort). Items whose
// transfer is no longer held are left out; it returns those written.
func endHeld[T any](l *ledger, items []T, transfer func(*T) *state.Transfer, write func([]T) ([]state.Result, error)) ([]T, []state.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := items[:0:0]
	for _, it := range items {
		if t, ok := l.held[transfer(&it).ID]; ok {
			*transfer(&it) = *t
			list = append(list, it)
		}
	}
	if len(list) == 0 {
		return nil, nil, nil
	}
	res, err := write(list)
	for i := range list {
		delete(l.held, transfer(&list[i]).ID)
	}
	if err != nil {
		return list, nil, err
	}
	for _, r := range res {
		if r.Err == nil && r.State.Terminal() {
			delete(l.unsettled, r.ID)
		}
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

// ended forgets, for the drain check, the transfers that the results of a
// write show terminal.
func (l *ledger) ended(res []state.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range res {
		if r.Err == nil && r.State.Terminal() {
			delete(l.unsettled, r.ID)
		}
	}
}

// unsettledIDs returns the transfers claimed this run that no write or
// read has shown terminal yet.
func (l *ledger) unsettledIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.unsettled))
	for id := range l.unsettled {
		ids = append(ids, id)
	}
	return ids
}

// settled forgets, for the drain check, transfers read terminal or gone.
func (l *ledger) settled(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		delete(l.unsettled, id)
	}
}

// heldPerLink is what the agent holds per link: submitted and claimed.
func (l *ledger) heldPerLink() map[string]int {
	m := l.links.snapshot()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.held {
		m[t.Link()]++
	}
	return m
}

// countLinks starts counting the submitted transfers per link anew, for
// a monitor phase; the function it returns ends the count (see
// linkCounts.begin).
func (l *ledger) countLinks(t *tally) func() { return l.links.begin(t) }

// observeLinks counts a monitored group: its listed transfers, less those
// that ended.
func (l *ledger) observeLinks(jobs []state.Job, outs []outcome) { l.links.observe(jobs, outs) }

func idsOf(fs []planned) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
	}
	return ids
}

// linkCounts counts the agent's submitted transfers per link: the last
// monitor phase's count, plus those committed since.
type linkCounts struct {
	mu        sync.Mutex
	submitted map[string]int
	next      map[string]int // the count of the monitor phase under way
}

// begin starts a monitor phase's count; the function it returns ends it.
// When the phase had errors (a group not listed, say) the new count may
// miss transfers, so each link keeps the larger of the old and new counts:
// a link is never thought emptier than it is.
func (c *linkCounts) begin(t *tally) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = map[string]int{}
	errs := t.ps.Errors
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.ps.Errors > errs {
			for k, n := range c.submitted {
				c.next[k] = max(c.next[k], n)
			}
		}
		c.submitted, c.next = c.next, nil
	}
}

// observe counts a monitored group: its listed transfers, less those that
// ended.
func (c *linkCounts) observe(jobs []state.Job, outs []outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = map[string]int{}
	}
	for _, j := range jobs {
		for i := range j.Transfers {
			c.next[j.Transfers[i].Link()]++
		}
	}
	for _, o := range outs {
		c.next[o.t.Link()]--
	}
}

// committed counts a transfer just committed to an FTS job on link.
func (c *linkCounts) committed(link string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.submitted == nil {
		c.submitted = map[string]int{}
	}
	c.submitted[link]++
}

// snapshot returns a copy of the counts.
func (c *linkCounts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.submitted))
	for k, n := range c.submitted {
		m[k] += n
	}
	return m
}
