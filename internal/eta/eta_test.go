package eta_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/eta"
)

// TestMeter: the rate is what finished since the run started, over the
// whole run: a burst of a job's files at the end of a long wait gives the
// run's pace, not the burst's; nothing is promised before a unit has
// finished.
func TestMeter(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := eta.New(t0, 0)
	if got := m.Text(t0.Add(90*time.Second), 100); got != "–/s · ETA –" {
		t.Errorf("before anything finished: %q", got)
	}
	// nothing for a minute (submission, FTS's queue), then a job of 50
	// files ends together
	m.Observe(50)
	if got, want := m.Text(t0.Add(100*time.Second), 250), "0.5/s · ETA 8m20s"; got != want {
		t.Errorf("after a burst: %q, want %q (50 in 100 s: 250 more take 500 s)", got, want)
	}
	m.Observe(40) // never backwards
	if got, want := m.Text(t0.Add(200*time.Second), 0), "0.2/s · ETA 0s"; got != want {
		t.Errorf("drained: %q, want %q", got, want)
	}
	resumed := eta.New(t0, 1000) // an operation that starts with 1000 done
	resumed.Observe(1100)
	if r, ok := resumed.PerSecond(t0.Add(10 * time.Second)); !ok || r != 10 {
		t.Errorf("rate from a base of 1000: %v %v, want 10/s", r, ok)
	}
}
