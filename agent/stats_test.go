package agent_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
)

// TestPassStats_Add: a run's total adds up the counts and durations of its
// passes and keeps the latest pass's standing (pass number, active).
func TestPassStats_Add(t *testing.T) {
	var total agent.PassStats
	total.Add(agent.PassStats{Pass: 1, Claimed: 5, Submitted: 5, Jobs: 1, Active: 5, Submit: time.Second})
	total.Add(agent.PassStats{Pass: 2, Done: 3, Failed: 1, Retried: 1, Deleted: 2, Active: 0, Monitor: 2 * time.Second})
	want := agent.PassStats{Pass: 2, Claimed: 5, Submitted: 5, Jobs: 1, Done: 3, Failed: 1, Retried: 1, Deleted: 2,
		Submit: time.Second, Monitor: 2 * time.Second}
	if total != want {
		t.Errorf("total %+v, want %+v", total, want)
	}
}
