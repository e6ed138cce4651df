package agent

import (
	"testing"

	"github.com/asyncstageout/aso/fts"
)

// TestClassify_DestinationOurs: the destination copy is deleted unless FTS
// refused to overwrite it, or the transfer never left FTS's queue with no
// earlier FTS-side attempt that could have written it.
func TestClassify_DestinationOurs(t *testing.T) {
	const expired = "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"
	for _, tc := range []struct {
		reason  string
		retries int
		class   fts.ErrorClass
		delete  bool
	}{
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 0, fts.ClassDestinationExists, false},
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 2, fts.ClassDestinationExists, false},
		{expired, 0, fts.ClassQueueExpired, false},
		{expired, 1, fts.ClassQueueExpired, true},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)", 0, fts.ClassTimeout, true},
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", 0, fts.ClassSourceMissing, true},
	} {
		class, _, del := classify(&fts.FileStatus{Retry: tc.retries}, tc.reason)
		if class != tc.class || del != tc.delete {
			t.Errorf("%q after %d FTS retries: %s, delete %v; want %s, delete %v", tc.reason, tc.retries, class, del, tc.class, tc.delete)
		}
	}
}
