package agent

import "testing"

// TestPassStats_Progressed: what keeps --give-up-after from stopping a run.
// A pass with errors made progress if it changed a transfer or FTS
// answered for transfers still running; transfers counted active only
// because their job's status could not be read (Active without running)
// are no progress.
func TestPassStats_Progressed(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   PassStats
		want bool
	}{
		{"errors only", PassStats{Errors: 3}, false},
		{"status unread: active by default", PassStats{Errors: 1, Active: 40}, false},
		{"FTS answered for running transfers", PassStats{Errors: 1, Active: 40, running: 25}, true},
		{"claimed", PassStats{Errors: 1, Claimed: 1}, true},
		{"recorded", PassStats{Errors: 1, Done: 2}, true},
		{"sent back", PassStats{Errors: 1, Lost: 1}, true},
		{"deleted", PassStats{Errors: 1, Deleted: 1}, true},
		{"a copy to delete found gone", PassStats{Errors: 1, AlreadyGone: 1}, true},
		{"retried", PassStats{Errors: 1, Retried: 1}, true},
		{"released", PassStats{Errors: 1, Released: 1}, true},
		{"settled by a claim", PassStats{Errors: 1, Settled: 1, Failed: 1}, true},
	} {
		if got := tc.ps.progressed(); got != tc.want {
			t.Errorf("%s: progressed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
