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

func (dieAtCommit) SetTransferIDs(context.Context, []state.CommitJob) ([][]state.Result, error) {
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

// dieAfterPrepare is a store whose agent dies right after it wrote the
// sids, before it submitted anything.
type dieAfterPrepare struct{ agent.Store }

func (s dieAfterPrepare) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	if _, err := s.Store.PrepareSubmits(ctx, jobs); err != nil {
		return nil, err
	}
	runtime.Goexit()
	return nil, nil
}

// TestAgent_KillOfADeadAgentsSubmission: an agent died after writing the
// sids of its transfers, and the user killed the first of them before the
// next run. If the dead agent's job reached FTS, the next run adopts it and
// cancels the killed file there, so it is killed and FTS does not copy it
// (recording it "killed before submission" would leave the job running);
// if FTS never had the job, the killed transfer is killed without a
// submission and the others are submitted under the same sid.
func TestAgent_KillOfADeadAgentsSubmission(t *testing.T) {
	for _, reached := range []bool{true, false} {
		w := newWorld(t, ftstest.Options{QueueDelay: time.Hour}) // still queued when the next run comes
		reqs := w.goodRequests(3)
		ctx := context.Background()
		store := agent.Store(dieAfterPrepare{w.open("agent-dead")})
		if reached {
			store = dieAtCommit{w.open("agent-dead")}
		}
		dead, err := agent.New(w.config("agent-dead"), store, w.client, w.sites, w.deleter, w.log)
		must(t, err)
		done := make(chan struct{})
		go func() { defer close(done); _ = dead.Run(ctx) }()
		<-done
		if n, want := len(w.sim.Files()), map[bool]int{true: 3, false: 0}[reached]; n != want {
			t.Fatalf("job reached FTS %v: the dead agent submitted %d files, want %d", reached, n, want)
		}
		kres, err := w.store.RequestKill(ctx, []string{reqs[0].ID()})
		must(t, err)
		must(t, kres[0].Err)
		w.clk.Advance(agent.DefaultLockTTL + time.Second)
		must(t, w.agent(w.config("agent-next"), nil).Run(ctx))

		subs := submissionsByTransfer(w.sim.Files())
		killed := w.get(reqs[0].ID())
		if killed.State != state.StateKilled {
			t.Errorf("job reached FTS %v: the killed transfer is %s (%q), want killed", reached, killed.State, killed.Reason)
		}
		switch {
		case reached && (len(subs[killed.ID]) != 1 || subs[killed.ID][0].State != "CANCELED"):
			t.Errorf("the killed transfer's FTS files %+v, want its one file CANCELED", subs[killed.ID])
		case !reached && len(subs[killed.ID]) != 0:
			t.Errorf("the killed transfer was submitted %d times after the kill, want never", len(subs[killed.ID]))
		}
		for _, r := range reqs[1:] {
			if tr := w.get(r.ID()); tr.State != state.StateDone || len(subs[r.ID()]) != 1 {
				t.Errorf("job reached FTS %v: %s is %s (%q), submitted %d times; want done, once", reached, r.ID()[:8], tr.State, tr.Reason, len(subs[r.ID()]))
			}
		}
	}
}
