package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_PollsSoonAfterSubmission: with a first poll of 2 s and an
// interval of a minute, the run asks about its job 2 s after submitting
// it, then 4, 8, 16 s..., and records the transfers of a 25 s job within
// the ramp, where a fixed minute's wait took two minutes to drain them.
func TestAgent_PollsSoonAfterSubmission(t *testing.T) {
	w := newWorld(t, ftstest.Options{TransferTime: 25 * time.Second})
	reqs := w.goodRequests(3)
	cfg := w.config("agent-1")
	cfg.FirstPoll = 2 * time.Second
	var slept []time.Duration
	cfg.Sleep = func(d time.Duration, _ <-chan struct{}) { slept = append(slept, d); w.clk.Advance(d) }
	a := w.agent(cfg, nil)
	start := w.clk.Now()
	must(t, a.Run(context.Background()))
	if len(slept) < 2 || slept[0] != 2*time.Second || slept[1] != 4*time.Second {
		t.Fatalf("waits between passes %v, want 2s, 4s, ... after the submission", slept)
	}
	if took := w.clk.Now().Sub(start); took >= time.Minute {
		t.Fatalf("the run took %s on the clock (waits %v), want less than the interval", took, slept)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Fatalf("transfer %s is %s, want done", got.ID, got.State)
		}
	}
}
