package agent_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/busytest"
	"github.com/asyncstageout/aso/state"
)

// pagedStore records what the agent asked of the store's listings of
// active jobs, and fails the ActiveTransfersOf calls fail picks.
type pagedStore struct {
	agent.Store
	// fail, if set, is asked before ActiveTransfersOf call n (from 1);
	// a non-nil error fails the call.
	fail func(n int, jobs []string) error
	// frozen: ActiveJobs answers the listing it last made, without asking
	// the store again (for measurements in which no job ends).
	frozen bool

	mu        sync.Mutex
	refs      []state.JobRef // the last ActiveJobs listing
	lists     int            // ActiveJobs calls: one per pass
	of        []pagedCall    // every ActiveTransfersOf call
	transient []int          // items of every SetTransientState call
}

// pagedCall is one ActiveTransfersOf call.
type pagedCall struct {
	pass      int // the pass it was made in: ActiveJobs calls before it
	jobs      []string
	transfers int // returned
	err       error
}

func (p *pagedStore) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	p.mu.Lock()
	p.lists++
	if p.frozen && p.refs != nil {
		defer p.mu.Unlock()
		return slices.Clone(p.refs), nil
	}
	p.mu.Unlock()
	refs, err := p.Store.ActiveJobs(ctx, user)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.refs = refs
	p.mu.Unlock()
	return refs, nil
}

func (p *pagedStore) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]state.Job, error) {
	p.mu.Lock()
	p.of = append(p.of, pagedCall{pass: p.lists, jobs: slices.Clone(jobs)})
	n := len(p.of)
	p.mu.Unlock()
	var out []state.Job
	var err error
	if p.fail != nil {
		err = p.fail(n, jobs)
	}
	if err == nil {
		out, err = p.Store.ActiveTransfersOf(ctx, user, jobs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	call := &p.of[n-1]
	call.err = err
	for _, j := range out {
		call.transfers += len(j.Transfers)
	}
	return out, err
}

func (p *pagedStore) SetTransientState(ctx context.Context, items []state.Transient) ([]state.Result, error) {
	p.mu.Lock()
	p.transient = append(p.transient, len(items))
	p.mu.Unlock()
	return p.Store.SetTransientState(ctx, items)
}

// calls returns the ActiveTransfersOf calls made so far.
func (p *pagedStore) calls() []pagedCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.of)
}

// checkBound fails t if a group held more than bound transfers, or no pass
// checked more than one group.
func (p *pagedStore) checkBound(t *testing.T, bound int) {
	t.Helper()
	perPass := map[int]int{}
	for i, c := range p.calls() {
		if c.transfers > bound {
			t.Errorf("group %d (pass %d) held %d transfers, over the bound of %d", i+1, c.pass, c.transfers, bound)
		}
		perPass[c.pass]++
	}
	if most := maxValue(perPass); most < 2 {
		t.Errorf("at most %d group per pass: the transfers were never split into groups", most)
	}
}

func maxValue(m map[int]int) int {
	n := 0
	for _, v := range m {
		n = max(n, v)
	}
	return n
}

// pagedWorld is a world whose agents' stores page (pagedStore) with
// groups of at most bound transfers.
func pagedWorld(t *testing.T, simOpts ftstest.Options, bound int) (*world, func() *pagedStore) {
	w := newWorld(t, simOpts)
	w.monitorGroup = bound
	var mu sync.Mutex
	var last *pagedStore
	w.wrap = func(s agent.Store) agent.Store {
		mu.Lock()
		defer mu.Unlock()
		last = &pagedStore{Store: s}
		return last
	}
	return w, func() *pagedStore { mu.Lock(); defer mu.Unlock(); return last }
}

// TestAgent_EndToEnd_Paged is the end-to-end scenario (failures and their
// destination deletions, kills cancelled in FTS, retries, dependencies)
// with a store that lists active transfers a few jobs at a time and groups
// of at most three jobs: every group is checked and recorded on its own.
func TestAgent_EndToEnd_Paged(t *testing.T) {
	const bound = 45 // three jobs of 15 files
	w, store := pagedWorld(t, endToEndSim, bound)
	endToEnd(t, w)
	p := store()
	p.checkBound(t, bound)
	if p.lists == 0 {
		t.Errorf("ActiveJobs was never called: the agent did not page")
	}
	var progress int
	for _, n := range p.transient {
		if n > bound {
			t.Errorf("progress of %d transfers written at once, over the group bound of %d", n, bound)
		}
		progress += n
	}
	if progress == 0 {
		t.Errorf("no progress recorded")
	}
}

// TestAgent_MonitorGroups: many jobs, running over several passes, are
// checked in groups of whole jobs never over the bound, one FTS status
// request per group, with their progress written per group, and all end
// done.
func TestAgent_MonitorGroups(t *testing.T) {
	const bound = 7 // two jobs of 3 files
	w, store := pagedWorld(t, ftstest.Options{QueueDelay: 30 * time.Second, TransferTime: 2 * time.Minute}, bound)
	reqs := w.goodRequests(42) // 14 full jobs
	cfg := w.config("agent-1")
	cfg.BatchSize = 42
	cfg.MaxFilesPerJob = 3
	a := w.agent(cfg, nil)
	p := store()
	statusBefore := 0
	var active int
	a.OnPass = func(ps agent.PassStats) {
		status := w.sim.Requests()["status"]
		groups := 0
		for _, c := range p.calls() {
			if c.pass == ps.Pass && c.transfers > 0 {
				groups++
			}
		}
		if got := status - statusBefore; got != groups {
			t.Errorf("pass %d: %d FTS status requests for %d groups, want one per group", ps.Pass, got, groups)
		}
		statusBefore = status
		active = max(active, ps.Active)
	}
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s %q, want done", r.ID(), got.State, got.Reason)
		}
	}
	if active != len(reqs) {
		t.Errorf("at most %d transfers active in a pass, want all %d (the scenario needs them running together)", active, len(reqs))
	}
	p.checkBound(t, bound)
	for i, c := range p.calls() {
		if len(c.jobs) > 2 {
			t.Errorf("group %d asked for %d jobs, want at most 2 (of 3 files each)", i+1, len(c.jobs))
		}
	}
	var progress int
	for _, n := range p.transient {
		if n > bound {
			t.Errorf("progress of %d transfers written at once, over the group bound of %d", n, bound)
		}
		progress += n
	}
	if progress < len(reqs) {
		t.Errorf("progress written for %d transfers, want every running one at least once", progress)
	}
}

// TestAgent_MonitorGroups_FullHundreds: groups are cut to whole hundreds
// of jobs, so 300 jobs take three FTS status requests, not four (two
// groups of 150 would take two each).
func TestAgent_MonitorGroups_FullHundreds(t *testing.T) {
	w, store := pagedWorld(t, ftstest.Options{}, 150)
	reqs := w.goodRequests(300)
	cfg := w.config("agent-1")
	cfg.MaxFilesPerJob = 1
	cfg.BatchSize = 300
	a := w.agent(cfg, nil)
	var status int
	a.OnPass = func(ps agent.PassStats) {
		if ps.Pass == 1 {
			status = w.sim.Requests()["status"]
			if ps.Done != len(reqs) {
				t.Errorf("pass 1: %d done, want %d", ps.Done, len(reqs))
			}
		}
	}
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if status != 3 {
		t.Errorf("%d FTS status requests for 300 jobs, want 3", status)
	}
	var sizes []int
	for _, c := range store().calls() {
		if c.pass == 1 {
			sizes = append(sizes, len(c.jobs))
		}
	}
	if !slices.Equal(sizes, []int{100, 100, 100}) {
		t.Errorf("groups of %v jobs, want [100 100 100]", sizes)
	}
}

// TestAgent_MonitorGroups_OneGroupFails: a group whose listing fails is
// skipped for the pass (an error of the pass, so the agent does not
// exit), the other groups are recorded, and the next pass records it.
func TestAgent_MonitorGroups_OneGroupFails(t *testing.T) {
	const bound = 8 // two jobs of 4 files
	w, store := pagedWorld(t, ftstest.Options{}, bound)
	reqs := w.goodRequests(40)
	cfg := w.config("agent-1")
	cfg.MaxFilesPerJob = 4
	a := w.agent(cfg, nil)
	p := store()
	failed := map[string]bool{}
	p.fail = func(n int, jobs []string) error {
		if n != 2 {
			return nil
		}
		for _, j := range jobs {
			failed[j] = true
		}
		return errors.New("store unreachable")
	}
	a.OnPass = func(ps agent.PassStats) {
		if ps.Pass != 1 {
			return
		}
		if ps.Errors == 0 {
			t.Errorf("pass 1: no error counted for the group that could not be listed")
		}
		if got, want := ps.Done, len(reqs)-bound; got != want {
			t.Errorf("pass 1: %d done, want %d (all but the failed group)", got, want)
		}
		if len(failed) != 2 {
			t.Fatalf("the failing group had %d jobs, want 2", len(failed))
		}
		for _, r := range reqs {
			tr := w.get(r.ID())
			want := state.StateDone
			if failed[tr.FTSJob] {
				want = state.StateSubmitted
			}
			if tr.State != want {
				t.Errorf("after pass 1: %s of job %s is %s, want %s", tr.ID, tr.FTSJob, tr.State, want)
			}
		}
	}
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s, want done", r.ID(), got.State)
		}
	}
	calls := p.calls()
	if len(calls) < 6 || calls[1].err == nil {
		t.Fatalf("ActiveTransfersOf calls %+v: want 5 groups in pass 1, the second failed, and more after", calls)
	}
}

// TestAgent_MonitorGroups_JobOverBound: a job larger than the bound is a
// group of its own, never split and never skipped.
func TestAgent_MonitorGroups_JobOverBound(t *testing.T) {
	w, store := pagedWorld(t, ftstest.Options{}, 2)
	reqs := w.goodRequests(9)
	cfg := w.config("agent-1")
	cfg.MaxFilesPerJob = 3
	if err := w.agent(cfg, nil).Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s, want done", r.ID(), got.State)
		}
	}
	calls := store().calls()
	if len(calls) != 3 {
		t.Fatalf("%d groups, want 3 (one per job of 3 files)", len(calls))
	}
	for i, c := range calls {
		if len(c.jobs) != 1 || c.transfers != 3 {
			t.Errorf("group %d: %d jobs, %d transfers; want 1 job of 3", i+1, len(c.jobs), c.transfers)
		}
	}
}

// TestAgent_MonitorGroups_StatusWhileReading: the status of a group's jobs
// is asked of FTS while the group's transfers are read from the store, not
// after: each read waits until the agent has asked FTS once more than it
// had at the previous read (the group's early request may have been
// answered before this read began). An agent that asked only after the
// read would leave it waiting, which the read notes as late after a bound
// no correct agent comes near. Every transfer still ends done, with one
// status request per group.
func TestAgent_MonitorGroups_StatusWhileReading(t *testing.T) {
	const bound = 8 // two jobs of 4 files
	w, store := pagedWorld(t, ftstest.Options{}, bound)
	reqs := w.goodRequests(24)
	cfg := w.config("agent-1")
	cfg.MaxFilesPerJob = 4
	asked := askedFTS{FTS: w.client, asked: make(chan struct{}, 100)}
	a, err := agent.New(cfg, w.wrap(w.open(cfg.Owner)), asked, w.sites, w.deleter, w.log)
	must(t, err)
	p := store()
	var late []int
	p.fail = func(n int, jobs []string) error {
		select {
		case <-asked.asked:
		case <-time.After(busytest.Scale(30 * time.Second)):
			late = append(late, n)
		}
		return nil
	}
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(late) > 0 {
		t.Errorf("groups %v were read before their status was asked", late)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s, want done", r.ID(), got.State)
		}
	}
	if got, groups := w.sim.Requests()["status"], len(p.calls()); got != groups {
		t.Errorf("%d status requests for %d group reads: want one each", got, groups)
	}
}

// askedFTS says on asked each time the agent asks FTS for job statuses.
type askedFTS struct {
	agent.FTS
	asked chan struct{}
}

func (f askedFTS) Status(ctx context.Context, ids []string) ([]fts.JobStatus, error) {
	f.asked <- struct{}{}
	return f.FTS.Status(ctx, ids)
}
