package cmd_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// TestRunProcess_TakesBackAfterSIGKILL: an agent SIGKILLed once it wrote
// the submission IDs of its first jobs leaves them acquired under 15-minute
// leases; the next run takes them back at once (it does not wait the leases
// out), adopts or submits them exactly once, and drains the queue with every
// invariant intact.
func TestRunProcess_TakesBackAfterSIGKILL(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		const user = "gina"
		sim := fastSim(43)
		sim.Latency = 400 * time.Millisecond // the submission is in flight when the kill lands
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: sim, Seed: 43})
		w.AddMix(user, 60)
		args := []string{"--max-files-per-job", "5", "--batch-size", "20", "--lock-ttl", "1s", "--lease-ttl", "15m"}
		a := w.StartAgent(user, args...)
		if !a.WaitLog("submit_sid written", 10*time.Second) {
			t.Fatalf("the first agent wrote no submit_sid:\n%s", a.Tail(20))
		}
		a.Kill()
		a.Wait(10 * time.Second)

		held, err := w.Store().List(context.Background(), state.Filter{User: user, States: []state.State{state.StateAcquired}})
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, tr := range held {
			if tr.LeaseExpires.After(time.Now().Add(10 * time.Minute)) {
				live++
			}
		}
		if live == 0 {
			t.Fatalf("the killed agent left no claim under a live lease (%d acquired): nothing to take back", len(held))
		}

		start := time.Now()
		p := w.RunToEnd(user, 90*time.Second, args...)
		if !p.WaitLog("took back the claims", 0) {
			t.Errorf("the next run did not take back the %d claims:\n%s", live, p.Tail(20))
		}
		r := w.Check(proctest.CheckOptions{})
		t.Logf("%d claims taken back; drained in %s: %s", live, time.Since(start).Round(time.Millisecond), r)
		r.Require(t)
	})
}
