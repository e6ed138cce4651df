package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// slowMonitor is a store on which the monitor phase takes d of the clock,
// like a pass that queries many FTS jobs.
type slowMonitor struct {
	agent.Store
	advance func()
}

func (s slowMonitor) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	s.advance()
	return s.Store.ActiveJobs(ctx, user)
}

// TestAgent_WaitsForRetryDueDuringPass: a transfer whose cool-off ends
// after the pass's claim but before the agent decides whether to exit was
// neither claimed nor counted as waiting, so the agent exited and left it
// new until the next cron run.
func TestAgent_WaitsForRetryDueDuringPass(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("retry", 0, true)
	w.enqueue([]state.Request{r})
	ctx := context.Background()
	other := w.open("other-agent")
	ts, err := statetest.Claim(ctx, other, 1)
	if err != nil || len(ts) != 1 {
		t.Fatalf("claim: %v, %d transfers", err, len(ts))
	}
	res, err := other.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "TRANSFER [110] Connection timed out"}})
	must(t, err)
	must(t, res[0].Err)
	// the cool-off is 5 minutes; passes are a minute apart and each
	// monitor phase takes 2 minutes: the second pass claims at 3 min and
	// ends at 5 min, when the retry has just become due
	a := w.agent(w.config("agent-1"), slowMonitor{w.open("agent-1"), func() { w.clk.Advance(2 * time.Minute) }})
	if err := a.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := w.get(r.ID()); got.State != state.StateDone {
		t.Fatalf("transfer is %s (retry after %s, now %s), want done", got.State, got.RetryAfter, w.clk.Now())
	}
}
