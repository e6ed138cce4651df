package agent_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// dieAtCommit is the store of an agent that dies (as by SIGKILL) once FTS
// accepted its job, before the commit: nothing more is written, its run
// lock and its claims stay.
type dieAtCommit struct{ agent.Store }

func (dieAtCommit) SetTransferID(context.Context, []state.Commit, string) ([]state.Result, error) {
	runtime.Goexit()
	return nil, nil
}

// TestAgent_TakesBackDeadAgentsClaimsAtOnce: after an agent died between
// its FTS submission and the commit, the next run of the user takes its
// claims back at once (not after their leases), adopts the job FTS has by
// its deterministic ID instead of submitting again, and records every
// transfer done, saying so in each transfer's history.
func TestAgent_TakesBackDeadAgentsClaimsAtOnce(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	var reqs []state.Request
	for i := range 3 {
		r, _ := w.request("dead", i, true)
		reqs = append(reqs, r)
	}
	w.enqueue(reqs)
	ctx := context.Background()

	dead := w.agent(w.config("agent-dead"), dieAtCommit{w.open("agent-dead")})
	done := make(chan struct{})
	go func() { defer close(done); _ = dead.Run(ctx) }()
	<-done
	if n := w.sim.Requests()["submit"]; n != 1 {
		t.Fatalf("the dead agent made %d submissions, want 1", n)
	}
	var leaseEnd time.Time
	for _, r := range reqs {
		got := w.get(r.ID())
		if got.State != state.StateAcquired || got.Owner != "agent-dead" || got.SubmitSID == "" {
			t.Fatalf("after the death: %s owned by %q, sid %q; want acquired by the dead agent with a sid", got.State, got.Owner, got.SubmitSID)
		}
		leaseEnd = got.LeaseExpires.Time
	}

	w.clk.Advance(agent.DefaultLockTTL + time.Second) // the run lock expired, the leases did not
	start := w.clk.Now()
	if err := w.agent(w.config("agent-next"), nil).Run(ctx); err != nil {
		t.Fatalf("the next run: %v", err)
	}
	if n := w.sim.Requests()["submit"]; n != 1 {
		t.Errorf("FTS received %d submissions, want 1: the dead agent's job must be adopted, not resubmitted", n)
	}
	if end := w.clk.Now(); !end.Before(leaseEnd) {
		t.Errorf("the next run ended at %s (started %s), after the dead agent's leases expired at %s: it waited them out", end, start, leaseEnd)
	}
	for _, r := range reqs {
		got := w.get(r.ID())
		if got.State != state.StateDone {
			t.Errorf("transfer %s is %s (%q), want done", r.ID(), got.State, got.Reason)
		}
		found := false
		for _, h := range got.History {
			found = found || h.By == "agent-next" && strings.Contains(h.Reason, "taken back") && strings.Contains(h.Reason, "agent-dead")
		}
		if !found {
			t.Errorf("transfer %s: no history entry of the claim taken back: %+v", r.ID(), got.History)
		}
	}
}
