package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_RetryDueDuringThePassIsNotLeftBehind: a transfer in its
// cool-off is not claimed at the start of a pass, and its cool-off ends
// before the pass has finished. The agent must not take the queue for
// drained and exit: the transfer is claimable, and must end done.
func TestAgent_RetryDueDuringThePassIsNotLeftBehind(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(1)
	other := w.open("agent-0")
	ts, err := other.NewTransfers(context.Background(), 10)
	must(t, err)
	res, err := other.AbortTransfers(context.Background(), []state.Abort{{Transfer: ts[0], Reason: "TRANSFER [110] Connection timed out"}})
	must(t, err)
	must(t, res[0].Err)
	if got := w.get(reqs[0].ID()); got.State != state.StateNew || !got.RetryAfter.After(w.clk.Now()) {
		t.Fatalf("setup: %s retry after %s, want new in its cool-off", got.State, got.RetryAfter)
	}
	var once sync.Once
	store := hookStore{Store: w.open("agent-1"), afterClaim: func([]state.Transfer) {
		// the pass goes on; meanwhile the cool-off ends
		once.Do(func() { w.clk.Advance(5*time.Minute + time.Second) })
	}}
	must(t, w.agent(w.config("agent-1"), store).Run(context.Background()))
	if got := w.get(reqs[0].ID()); got.State != state.StateDone {
		t.Fatalf("%s is %s (retry after %s, now %s), want done", got.ID, got.State, got.RetryAfter, w.clk.Now())
	}
}
