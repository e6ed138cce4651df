package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestPassStats_Add: a run's total adds up the counts and durations of its
// passes and keeps the latest pass's standing (pass number, active).
func TestPassStats_Add(t *testing.T) {
	var total agent.PassStats
	total.Add(agent.PassStats{Pass: 1, Claimed: 5, Submitted: 5, Jobs: 1, Active: 5, Submit: time.Second})
	total.Add(agent.PassStats{Pass: 2, Done: 3, Failed: 1, Retried: 1, Deleted: 2, AlreadyGone: 1, Active: 0, Monitor: 2 * time.Second})
	want := agent.PassStats{Pass: 2, Claimed: 5, Submitted: 5, Jobs: 1, Done: 3, Failed: 1, Retried: 1, Deleted: 2, AlreadyGone: 1,
		Submit: time.Second, Monitor: 2 * time.Second}
	if total != want {
		t.Errorf("total %+v, want %+v", total, want)
	}
}

// TestAgent_CopyAlreadyGoneIsNoDeletion: the destination copy of a
// transfer that failed after FTS started copying it is to be deleted, but
// the simulator, like url-copy writing to a temporary name, left nothing
// there: gfal-rm finds it missing. That is no deletion: each is counted
// already gone, in the pass's counts and the metrics, never deleted, and
// the transfer's history says it was already gone.
func TestAgent_CopyAlreadyGoneIsNoDeletion(t *testing.T) {
	w := newWorld(t, ftstest.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	reqs := w.goodRequests(3)
	var total agent.PassStats
	a := w.agent(w.config("agent-1"), nil)
	a.OnPass = func(ps agent.PassStats) { total.Add(ps) }
	must(t, a.Run(context.Background()))
	attempts := 0
	for _, r := range reqs {
		got := w.get(r.ID())
		attempts += got.Attempts
		if got.State != state.StateFailed || !hasHistory(got, "was already gone") {
			t.Errorf("%s: %s (%q), want failed, its history saying the copy to delete was already gone", got.ID, got.State, got.Reason)
		}
	}
	if attempts == 0 || total.Deleted != 0 || total.AlreadyGone != attempts {
		t.Errorf("run totals: deleted %d, already gone %d, after %d failed attempts; want 0 deleted and one already gone each",
			total.Deleted, total.AlreadyGone, attempts)
	}
	m := a.Metrics()
	if d, g := counterOf(t, m, "aso_events_total", map[string]string{"event": "deleted"}),
		counterOf(t, m, "aso_events_total", map[string]string{"event": "already_gone"}); d != 0 || int(g) != attempts {
		t.Errorf("metrics: %v deleted, %v already gone; want 0 and %d", d, g, attempts)
	}
}
