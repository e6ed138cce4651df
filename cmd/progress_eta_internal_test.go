package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
)

// TestRunProgress_ETAFromTheWholeRun: the live line's ETA goes by the rate
// at which the run has finished transfers since it started. A run whose
// first pass ends after a minute of submitting, and whose next pass finds
// a job of 50 done, has done 50 in 61 s, and 250 more take minutes, not
// the 5 s the last second's burst would say; before a transfer has
// finished the line says "–".
func TestRunProgress_ETAFromTheWholeRun(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newRunProgress(t0)
	r.queued = 0
	r.add(agent.PassStats{Claimed: 300, Submitted: 300, Active: 300}, t0.Add(60*time.Second))
	if got := r.text(t0.Add(60 * time.Second)); !strings.HasSuffix(got, " · –/s · ETA –") {
		t.Errorf("before any transfer finished: %q, want the rate and ETA unknown", got)
	}
	r.add(agent.PassStats{Done: 50, Active: 250}, t0.Add(61*time.Second))
	got := r.text(t0.Add(61 * time.Second))
	if !strings.HasSuffix(got, " · 0.8/s · ETA 5m5s") {
		t.Errorf("after a job of 50 ended 61 s into the run: %q, want 0.8/s and an ETA of 5m5s (250 at 50/61 per second)", got)
	}
}
