package state_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// single hides the multi-job ability of a real store, and makes its calls
// fail from call failAt on (0: never).
type single struct {
	state.TransferState
	calls, failAt int
}

var errDown = errors.New("store unreachable")

func (s *single) fail() error {
	s.calls++
	if s.failAt > 0 && s.calls >= s.failAt {
		return errDown
	}
	return nil
}

func (s *single) PrepareSubmit(ctx context.Context, ts []state.Transfer, sid string) ([]state.Result, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.TransferState.PrepareSubmit(ctx, ts, sid)
}

func (s *single) SetTransferID(ctx context.Context, cs []state.Commit, job string) ([]state.Result, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.TransferState.SetTransferID(ctx, cs, job)
}

// claimedIn opens a memfile store with n transfers of alice claimed.
func claimedIn(t *testing.T, n int) (state.Store, []state.Transfer) {
	t.Helper()
	clock := statetest.NewClock(statetest.Start)
	s, err := memfile.Open(filepath.Join(t.TempDir(), "state.aso"), state.Config{
		Agent:  state.Agent{User: statetest.Alice, Owner: "agent-a"},
		Policy: state.Policy{LeaseTTL: time.Hour, CoolOff: time.Minute, MaxAttempts: 3}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var reqs []state.Request
	for i := range n {
		reqs = append(reqs, statetest.Req(statetest.Alice, i))
	}
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	ts, err := s.NewTransfers(ctx, n)
	if err != nil || len(ts) != n {
		t.Fatalf("claimed %d (%v), want %d", len(ts), err, n)
	}
	return s, ts
}

func TestMultiOf(t *testing.T) {
	ctx := context.Background()
	s, ts := claimedIn(t, 3)
	if m := state.MultiOf(s); !state.RecordsEndpoint(m) {
		t.Fatal("MultiOf of a store with the ability is not the store's own")
	}
	w := &single{TransferState: s}
	m := state.MultiOf(w)
	if state.RecordsEndpoint(m) {
		t.Fatal("the adapter claims to record endpoints")
	}
	res, err := m.PrepareSubmits(ctx, []state.PrepareJob{
		{Transfers: ts[:2], SID: "sid-a", Endpoint: "https://fts-a.example.org:8446"},
		{Transfers: ts[2:], SID: "sid-b", Endpoint: "https://fts-b.example.org:8446"},
	})
	if err != nil || len(res) != 2 || len(res[0]) != 2 || len(res[1]) != 1 || w.calls != 2 {
		t.Fatalf("PrepareSubmits: %v, %d calls, results %v; want one call and results per job", err, w.calls, res)
	}
	for i, want := range []string{"sid-a", "sid-a", "sid-b"} {
		got, err := s.Get(ctx, ts[i].ID)
		r := append(res[0], res[1]...)[i]
		if err != nil || r.Err != nil || got.SubmitSID != want || got.Rev != r.Rev || got.FTSEndpoint != "" {
			t.Fatalf("%s: sid %q rev %s endpoint %q (result %+v); want %q, the result's revision, no endpoint", ts[i].ID, got.SubmitSID, got.Rev, got.FTSEndpoint, r, want)
		}
		ts[i] = got
	}
	// the second job's write fails: the first is reported written, the
	// second not, and no error of the whole call hides the first
	w.calls, w.failAt = 0, 2
	cres, err := m.SetTransferIDs(ctx, []state.CommitJob{
		{Commits: []state.Commit{{Transfer: ts[0]}, {Transfer: ts[1]}}, JobID: "job-a"},
		{Commits: []state.Commit{{Transfer: ts[2]}}, JobID: "job-b"},
	})
	if err != nil || len(cres) != 2 {
		t.Fatalf("SetTransferIDs: %v, results %v; want per-job results", err, cres)
	}
	for i, r := range append(cres[0], cres[1]...) {
		got, _ := s.Get(ctx, ts[i].ID)
		if i < 2 && (r.Err != nil || got.State != state.StateSubmitted || got.FTSJob != "job-a") {
			t.Fatalf("%s: %+v, state %s job %q; want committed to job-a", ts[i].ID, r, got.State, got.FTSJob)
		}
		if i == 2 && (r.ID != ts[2].ID || !errors.Is(r.Err, errDown) || got.State != state.StateAcquired) {
			t.Fatalf("%s: %+v, state %s; want the store's error and still acquired", ts[2].ID, r, got.State)
		}
	}
	// the first job's write fails: nothing was written, the call fails
	w.calls, w.failAt = 0, 1
	if _, err := m.SetTransferIDs(ctx, []state.CommitJob{{Commits: []state.Commit{{Transfer: ts[2]}}, JobID: "job-b"}}); !errors.Is(err, errDown) {
		t.Fatalf("SetTransferIDs with the first write failing: %v, want %v", err, errDown)
	}
}
