package agent

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// TestClassify_DestinationOurs: the destination copy is deleted only if FTS
// started url-copy for the file (a start_time, or an FTS retry), and then
// unless FTS refused to overwrite it, or the transfer never left FTS's
// queue with no earlier FTS-side attempt that could have written it.
func TestClassify_DestinationOurs(t *testing.T) {
	const expired = "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		reason  string
		retries int
		start   time.Time
		class   state.ErrorClass
		delete  bool
	}{
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 0, started, state.ClassDestinationExists, false},
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 2, started, state.ClassDestinationExists, false},
		{expired, 0, time.Time{}, state.ClassQueueExpired, false},
		{expired, 1, time.Time{}, state.ClassQueueExpired, true},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)", 0, started, state.ClassTimeout, true},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)", 0, time.Time{}, state.ClassTimeout, false},
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", 0, started, state.ClassSourceMissing, true},
		{"Transfer canceled by the user", 0, time.Time{}, state.ClassCanceled, false},
		{"Transfer canceled by the user", 0, started, state.ClassCanceled, true},
	} {
		class, _, del := classify(&fts.FileStatus{Retry: tc.retries, StartTime: tc.start}, tc.reason)
		if class != tc.class || del != tc.delete {
			t.Errorf("%q after %d FTS retries, started %v: %s, delete %v; want %s, delete %v", tc.reason, tc.retries, !tc.start.IsZero(), class, del, tc.class, tc.delete)
		}
	}
}
