package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// goodRequests enqueues n transfers that succeed.
func (w *world) goodRequests(n int) []state.Request {
	w.t.Helper()
	reqs := make([]state.Request, n)
	for i := range reqs {
		reqs[i], _ = w.request("ok", i, true)
	}
	w.enqueue(reqs)
	return reqs
}

// TestAgent_SecondAgentLocked: while another agent holds the user's run
// lock, Run fails at once with ErrLocked and touches nothing.
func TestAgent_SecondAgentLocked(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(5)
	other := w.open("agent-0")
	if _, err := other.AcquireLock(context.Background(), testUser, "agent-0", time.Hour); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, r := range reqs {
		before[r.ID()] = w.get(r.ID()).Rev
	}
	err := w.agent(w.config("agent-1"), nil).Run(context.Background())
	if !errors.Is(err, state.ErrLocked) {
		t.Fatalf("Run = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "agent-0") {
		t.Errorf("error %q does not name the holder", err)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateNew || got.Rev != before[r.ID()] {
			t.Errorf("%s: %s rev %s, want untouched", r.ID(), got.State, got.Rev)
		}
	}
	if n := w.sim.Requests()["submit"]; n != 0 {
		t.Errorf("%d submissions by a locked-out agent", n)
	}
}

// hookStore injects a function after a call of the wrapped store.
type hookStore struct {
	agent.Store
	afterClaim func([]state.Transfer)
}

func (h hookStore) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	c, err := h.Store.NewTransfers(ctx, r)
	if err == nil && h.afterClaim != nil {
		h.afterClaim(c.Transfers)
	}
	return c, err
}

// TestAgent_LeaseLostMidRun: the clock passes the lease TTL right after the
// agent claimed, and another agent claims the same transfers. The first
// agent must never submit them nor write to them again.
func TestAgent_LeaseLostMidRun(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(12)
	thief := w.open("agent-thief")
	var once sync.Once
	var stolen map[string]state.Transfer
	store := hookStore{Store: w.open("agent-1"), afterClaim: func(ts []state.Transfer) {
		once.Do(func() {
			w.clk.Advance(16 * time.Minute)
			got, err := statetest.Claim(context.Background(), thief, 100)
			must(t, err)
			stolen = map[string]state.Transfer{}
			for _, tr := range got {
				stolen[tr.ID] = tr
			}
		})
	}}
	cfg := w.config("agent-1")
	cfg.Once = true
	cfg.LockTTL = time.Hour // the run lock outlives the leases: only the leases are lost
	if err := w.agent(cfg, store).Run(context.Background()); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(stolen) != len(reqs) {
		t.Fatalf("the other agent claimed %d transfers, want %d", len(stolen), len(reqs))
	}
	for id, want := range stolen {
		got := w.get(id)
		if got.Rev != want.Rev || got.Owner != "agent-thief" || got.SubmitSID != "" {
			t.Errorf("%s was written after it was lost: rev %s->%s owner %s sid %q", id, want.Rev, got.Rev, got.Owner, got.SubmitSID)
		}
	}
	if n := len(w.sim.Files()); n != 0 {
		t.Errorf("%d files submitted to FTS by the agent that lost its leases", n)
	}
}

// TestAgent_HangingFTS: an FTS server that never answers does not hang the
// agent; the claimed transfers keep their sid, and the next agent adopts or
// resubmits them with the same sid, so each is submitted exactly once.
func TestAgent_HangingFTS(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(20)
	tf := filepath.Join(w.dir, "token")
	short, err := fts.New(fts.Config{Endpoint: w.sim.URL, TokenFile: tf, Timeout: 300 * time.Millisecond, MaxElapsed: time.Second})
	must(t, err)
	if _, err := short.VO(context.Background()); err != nil { // whoami answers before the hang
		t.Fatal(err)
	}
	w.sim.SetHang(true)
	cfg := w.config("agent-1")
	cfg.Once = true
	cfg.PhaseTimeout = 2 * time.Second
	a, err := agent.New(cfg, w.open("agent-1"), short, w.sites, w.deleter, w.log)
	must(t, err)
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run against a hanging FTS: %v", err)
	}
	// the submissions came back, cut short by the client's timeout, rather
	// than holding the run
	if n := counterOf(t, a.Metrics(), "aso_request_errors_total", map[string]string{"service": "fts", "op": "submit"}); n == 0 {
		t.Errorf("no FTS submission ended with an error against a hanging FTS")
	}
	for _, r := range reqs {
		// the submission may have reached FTS: the sid stays, so the next
		// agent looks the job up before any resubmission
		tr := w.get(r.ID())
		if tr.State != state.StateAcquired || tr.SubmitSID == "" {
			t.Errorf("%s is %s with sid %q after a hanging FTS, want acquired with its sid", tr.ID, tr.State, tr.SubmitSID)
		}
	}
	w.sim.SetHang(false)
	w.clk.Advance(16 * time.Minute) // the first agent's leases expire
	if err := w.agent(w.config("agent-2"), nil).Run(context.Background()); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateDone {
			t.Errorf("%s: %s %q, want done", tr.ID, tr.State, tr.Reason)
		}
	}
	for id, subs := range submissionsByTransfer(w.sim.Files()) {
		if len(subs) != 1 {
			t.Errorf("transfer %s submitted %d times", id, len(subs))
		}
	}
}

// TestAgent_HangingGfalRm: a gfal-rm that never returns is killed at the
// deletion timeout; the outcome is retried on later passes and then
// recorded with the deletion failure in its reason, so it is never lost.
func TestAgent_HangingGfalRm(t *testing.T) {
	w := partialCopyWorld(t) // a failure after FTS began writing: the copy is the transfer's to delete
	r, _ := w.request("partial", 0, true)
	w.enqueue([]state.Request{r})
	hang := filepath.Join(w.dir, "gfal-rm-hangs")
	must(t, os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	cfg := w.config("agent-1")
	cfg.DeleteTimeout = 500 * time.Millisecond
	a, err := agent.New(cfg, w.open("agent-1"), w.client, w.sites, &srm.Deleter{Command: hang, Timeout: 500 * time.Millisecond}, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	// each deletion was killed at the timeout and counted as failed
	if n := counterOf(t, a.Metrics(), "aso_events_total", map[string]string{"event": "delete_failed"}); n < agent.MaxDeleteAttempts {
		t.Errorf("%v failed deletions counted, want %d (one per attempt)", n, agent.MaxDeleteAttempts)
	}
	tr := w.get(r.ID())
	if tr.State != state.StateFailed || !strings.Contains(tr.Reason, "partial write") || !strings.Contains(tr.Reason, "destination copy not deleted") {
		t.Errorf("transfer: %s %q, want failed with the FTS reason and the deletion failure", tr.State, tr.Reason)
	}
}

// TestAgent_PausedPastLockExpiry: an agent that was paused past its run
// lock's expiry (the clock jumps while it holds claims) while another agent
// took the lock and the transfers, must not write anything when it resumes:
// the write fence stops it before its first write, and Run fails with
// ErrLockLost.
func TestAgent_PausedPastLockExpiry(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(8)
	successor := w.open("agent-2")
	var once sync.Once
	taken := map[string]string{}
	store := hookStore{Store: w.open("agent-1"), afterClaim: func(ts []state.Transfer) {
		once.Do(func() {
			w.clk.Advance(20 * time.Minute)
			ctx := context.Background()
			if _, err := successor.AcquireLock(ctx, testUser, "agent-2", 5*time.Minute); err != nil {
				t.Errorf("successor cannot take the expired lock: %v", err)
			}
			got, err := statetest.Claim(ctx, successor, 100)
			must(t, err)
			for _, tr := range got {
				taken[tr.ID] = tr.Rev
			}
		})
	}}
	cfg := w.config("agent-1")
	err := w.agent(cfg, store).Run(context.Background())
	if !errors.Is(err, state.ErrLockLost) {
		t.Fatalf("Run = %v, want ErrLockLost", err)
	}
	if len(taken) != len(reqs) {
		t.Fatalf("successor claimed %d of %d", len(taken), len(reqs))
	}
	for id, rev := range taken {
		if got := w.get(id); got.Rev != rev || got.Owner != "agent-2" {
			t.Errorf("%s written after the pause: rev %s -> %s, owner %s", id, rev, got.Rev, got.Owner)
		}
	}
	if n := len(w.sim.Files()); n != 0 {
		t.Errorf("%d files submitted by the paused agent", n)
	}
	if _, err := successor.RenewLock(context.Background(), state.Lock{User: testUser, Holder: "agent-2"}, time.Minute); err != nil {
		t.Errorf("the paused agent disturbed its successor's lock: %v", err)
	}
}

// TestAgent_FTSRefusesCredentials: a token FTS does not accept stops the
// run before anything is claimed, with an error, and the lock is released.
func TestAgent_FTSRefusesCredentials(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(4)
	bad := filepath.Join(w.dir, "bad-token")
	must(t, os.WriteFile(bad, []byte("not-the-token"), 0o600))
	client, err := fts.New(fts.Config{Endpoint: w.sim.URL, TokenFile: bad, Timeout: 2 * time.Second})
	must(t, err)
	a, err := agent.New(w.config("agent-1"), w.open("agent-1"), client, w.sites, w.deleter, w.log)
	must(t, err)
	err = a.Run(context.Background())
	if !errors.Is(err, fts.ErrForbidden) && !errors.Is(err, fts.ErrUnauthorized) {
		t.Fatalf("Run = %v, want FTS's refusal", err)
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateNew || tr.Attempts != 0 {
			t.Errorf("%s: %s attempts %d, want untouched", tr.ID, tr.State, tr.Attempts)
		}
	}
	if _, err := w.open("agent-2").AcquireLock(context.Background(), testUser, "agent-2", time.Minute); err != nil {
		t.Errorf("lock not released: %v", err)
	}
}

// refusingFTS answers every submission with a 401, as FTS does when the
// credentials stop being accepted mid-run.
type refusingFTS struct{ agent.FTS }

func (refusingFTS) Submit(context.Context, fts.Submission) (string, error) {
	return "", &fts.HTTPError{StatusCode: 401, Message: "A valid X509 certificate or proxy is needed"}
}

// TestAgent_CredentialsRefusedMidRun: the claimed transfers are released
// without penalty (no attempt counted, no sid kept) and Run fails.
func TestAgent_CredentialsRefusedMidRun(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(6)
	a, err := agent.New(w.config("agent-1"), w.open("agent-1"), refusingFTS{w.client}, w.sites, w.deleter, w.log)
	must(t, err)
	err = a.Run(context.Background())
	if !errors.Is(err, fts.ErrUnauthorized) {
		t.Fatalf("Run = %v, want ErrUnauthorized", err)
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateNew || tr.Attempts != 0 || tr.SubmitSID != "" || tr.Owner != "" {
			t.Errorf("%s: %s attempts %d sid %q owner %q, want released without penalty", tr.ID, tr.State, tr.Attempts, tr.SubmitSID, tr.Owner)
		}
	}
}

// counterOf reads the counter name of m whose labels include want.
func counterOf(t *testing.T, m *agent.Metrics, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, mt := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	return 0
}
