package couch_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestStore_MonitorWithinTheClaimWindow: within state.StaleClaimWindow of
// a claim from the head of the queue, the monitor's listings read the view
// as it is (they do not wait for the index of the claims and commits
// since) and still list every job the store committed itself; a job
// another writer committed meanwhile is listed once the window has passed.
func TestStore_MonitorWithinTheClaimWindow(t *testing.T) {
	c := newClock()
	l := newWindowWorld(t, c)
	l.list([]string{"job-a"}, true, "within the window: the view as it was (no job yet) and a's own commit")
	c.Add(state.StaleClaimWindow)
	l.list([]string{"job-a", "job-b"}, false, "after the window: the view up to date")
	// a claim from the head begins a new window, on a view that shows both
	// jobs; a then records job-a's transfers done: the stale view still
	// shows them, the listing does not
	if _, err := statetest.Claim(context.Background(), l.a, 1); err != nil {
		t.Fatal(err)
	}
	l.finish("job-a")
	l.list([]string{"job-b"}, true, "a recorded every transfer of job-a done within the window")
}

// TestStore_MonitorAfterTransfersWentBack: transfers of a job the store
// does not remember (another store committed it) that it sends back to the
// queue within its claim window (a lost job: their job is cleared) are
// left out of the listings that read the view as it is, as finished ones
// are, so that the monitor does not ask FTS for their job again.
func TestStore_MonitorAfterTransfersWentBack(t *testing.T) {
	c := newClock()
	l := newWindowWorld(t, c)
	c.Add(state.StaleClaimWindow)
	if _, err := statetest.Claim(context.Background(), l.a, 1); err != nil {
		t.Fatal(err)
	}
	l.end("job-b", state.OutcomeLost)
	l.list([]string{"job-a"}, true, "a sent every transfer of job-b, committed by b, back to the queue within the window")
}

// finish records the transfers of job done through a.
func (l *windowWorld) finish(job string) { l.end(job, state.OutcomeDone) }

// end records the transfers of job with outcome through a.
func (l *windowWorld) end(job string, outcome state.Outcome) {
	l.t.Helper()
	ctx := context.Background()
	jobs, err := l.a.ActiveTransfersOf(ctx, "alice", []string{job})
	if err != nil || len(jobs) != 1 {
		l.t.Fatalf("ActiveTransfersOf(%s) = %v, %v", job, jobs, err)
	}
	var outs []state.Terminal
	for _, tr := range jobs[0].Transfers {
		outs = append(outs, state.Terminal{Transfer: tr, Outcome: outcome, FTSJob: job})
	}
	res, err := l.a.SetTerminalState(ctx, outs)
	mustOK(l.t, res, err)
}

// TestStore_MonitorWhenMemoryIsFull: a store that could not remember
// every transfer it committed (maxWritten) lists from an up-to-date view,
// even within the claim window.
func TestStore_MonitorWhenMemoryIsFull(t *testing.T) {
	couch.SetMaxWritten(t, 4)
	l := newWindowWorld(t, newClock())
	l.list([]string{"job-a", "job-b"}, false, "a's memory holds 4 of its 10 committed transfers")
}

// windowWorld is two stores of alice, a (whose view reads are recorded)
// and b, each holding a job of 10 submitted transfers: a's claim read the
// head of the queue, then b's brought the view up to date for the last
// time, then a committed job-a and b job-b.
type windowWorld struct {
	t  *testing.T
	a  *couch.Store
	vr *viewReads
}

func newWindowWorld(t *testing.T, c *clock) *windowWorld {
	ctx := context.Background()
	u := newDB(t)
	vr := &viewReads{rt: http.DefaultTransport}
	a := open(t, u, c, "alice", "host:1:a", couch.Options{Transport: vr})
	b := open(t, u, c, "alice", "host:2:b", couch.Options{})
	enqueue(t, a, requests("alice", 20))
	ca, cb := claimCommits(t, a, 10), claimCommits(t, b, 10)
	res, err := statetest.Commit(ctx, a, ca, "job-a")
	mustOK(t, res, err)
	res, err = statetest.Commit(ctx, b, cb, "job-b")
	mustOK(t, res, err)
	return &windowWorld{t, a, vr}
}

// claimCommits claims n transfers through s and returns their commits.
func claimCommits(t *testing.T, s *couch.Store, n int) []state.Commit {
	t.Helper()
	got := claim(t, s, n)
	cs := make([]state.Commit, len(got))
	for i := range got {
		cs[i] = state.Commit{Transfer: got[i]}
	}
	return cs
}

// list checks that a's ActiveJobs and ActiveTransfersOf give wantJobs,
// each with its 10 submitted transfers, ActiveJobs reading the view with
// update=false exactly when wantStale.
func (l *windowWorld) list(wantJobs []string, wantStale bool, why string) {
	t, ctx := l.t, context.Background()
	t.Helper()
	l.vr.take()
	refs, err := l.a.ActiveJobs(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, r := range refs {
		jobs = append(jobs, r.ID)
		if r.Transfers != 10 {
			t.Errorf("job %s with %d transfers, want 10", r.ID, r.Transfers)
		}
	}
	slices.Sort(jobs)
	if !slices.Equal(jobs, wantJobs) {
		t.Fatalf("ActiveJobs = %v, want %v: %s", jobs, wantJobs, why)
	}
	got, err := l.a.ActiveTransfersOf(ctx, "alice", jobs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range got {
		for _, tr := range j.Transfers {
			if tr.State != state.StateSubmitted || tr.FTSJob != j.ID {
				t.Errorf("job %s lists %s in %s of job %s", j.ID, tr.ID, tr.State, tr.FTSJob)
			}
			n++
		}
	}
	if n != 10*len(jobs) {
		t.Errorf("ActiveTransfersOf(%v) = %d transfers, want %d", jobs, n, 10*len(jobs))
	}
	if reads := l.vr.take(); len(reads) == 0 || reads[0] != wantStale {
		t.Errorf("view reads (true: update=false) %v, the first (ActiveJobs) want %v: %s", reads, wantStale, why)
	}
}

// TestStore_MonitorAfterTheIndexCaughtUp: transfers a store recorded done
// within its claim window are not taken off a job twice when another
// query brought the index up to date meanwhile: the job of an earlier
// store, which this one does not remember, is still listed with the
// transfers left.
func TestStore_MonitorAfterTheIndexCaughtUp(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	old := open(t, u, c, "alice", "host:0:old", couch.Options{})
	enqueue(t, old, requests("alice", 10))
	res, err := statetest.Commit(ctx, old, claimCommits(t, old, 10), "job-j")
	mustOK(t, res, err)

	s := open(t, u, c, "alice", "host:1:new", couch.Options{})
	if _, err := statetest.Claim(ctx, s, 1); err != nil { // reads the head: the window begins
		t.Fatal(err)
	}
	jobs, err := s.ActiveTransfersOf(ctx, "alice", []string{"job-j"})
	if err != nil || len(jobs) != 1 || len(jobs[0].Transfers) != 10 {
		t.Fatalf("ActiveTransfersOf = %v, %v", jobs, err)
	}
	var outs []state.Terminal
	for _, tr := range jobs[0].Transfers[:6] {
		outs = append(outs, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-j"})
	}
	res, err = s.SetTerminalState(ctx, outs)
	mustOK(t, res, err)
	bob := open(t, u, c, "bob", "host:2:b", couch.Options{})
	if _, err := statetest.Claim(ctx, bob, 1); err != nil { // brings the index up to date
		t.Fatal(err)
	}
	refs, err := s.ActiveJobs(ctx, "alice")
	if err != nil || len(refs) != 1 || refs[0].ID != "job-j" || refs[0].Transfers != 4 {
		t.Fatalf("ActiveJobs = %+v, %v; want job-j with its 4 transfers left", refs, err)
	}
}
