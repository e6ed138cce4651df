package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// TestClassify_DestinationOurs: the destination copy is a candidate for
// deletion only if FTS started url-copy for the file (a start_time, or an
// FTS retry), and then unless FTS refused to overwrite it or the transfer
// never left FTS's queue; whether the attempt wrote there is the deletion
// rule's evidence (TestAttemptWrote).
func TestClassify_DestinationOurs(t *testing.T) {
	const expired = "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		reason       string
		retries      int
		start        time.Time
		class        state.ErrorClass
		clean, wrote bool
	}{
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 0, started, state.ClassDestinationExists, false, false},
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 2, started, state.ClassDestinationExists, false, false},
		{expired, 0, time.Time{}, state.ClassQueueExpired, false, false},
		{expired, 1, time.Time{}, state.ClassQueueExpired, false, false},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)", 0, started, state.ClassTimeout, true, true},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)", 0, time.Time{}, state.ClassTimeout, false, false},
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", 0, started, state.ClassSourceMissing, true, false},
		{"Transfer canceled by the user", 0, time.Time{}, state.ClassCanceled, false, false},
		{"Transfer canceled by the user", 0, started, state.ClassCanceled, true, true},
	} {
		class, _, clean, wrote := classify(&fts.FileStatus{Retry: tc.retries, StartTime: tc.start}, tc.reason)
		if class != tc.class || clean != tc.clean || wrote != tc.wrote {
			t.Errorf("%q after %d FTS retries, started %v: %s, clean %v, wrote %v; want %s, %v, %v",
				tc.reason, tc.retries, !tc.start.IsZero(), class, clean, wrote, tc.class, tc.clean, tc.wrote)
		}
	}
}

// TestAttemptWrote: the deletion rule's evidence that an attempt began
// writing its destination, over every scope FTS writes and every errno
// the classification reads (and a few it does not), started or not: only
// a transfer-side or destination-side failure after url-copy started,
// other than "file exists", shows it. Then the reasons without a scope
// and of the older format, and the classes no FTS reason gives; every
// error class is covered.
func TestAttemptWrote(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	errnos := []int{0, 1, 2, 5, 7, 11, 13, 16, 17, 20, 21, 22, 27, 28, 30, 32, 36, 38, 62, 70, 93, 95, 100, 101,
		103, 104, 107, 110, 111, 112, 113, 121, 122, 125, 127, 129}
	seen := map[state.ErrorClass]bool{}
	check := func(reason string, f fts.FileStatus, want bool) {
		t.Helper()
		c := fts.Classify(reason, f.Recoverable)
		seen[c.Class] = true
		if got := attemptWrote(&f, c); got != want {
			t.Errorf("%q (class %s, start %v, FTS retries %d): wrote %v, want %v", reason, c.Class, !f.StartTime.IsZero(), f.Retry, got, want)
		}
	}
	for _, scope := range []string{fts.ScopeSource, fts.ScopeDestination, fts.ScopeTransfer, fts.ScopeGeneral} {
		for _, errno := range errnos {
			reason := fmt.Sprintf("%s [%d] the storage said no", scope, errno)
			check(reason, fts.FileStatus{}, false)                                               // url-copy never ran
			check(reason, fts.FileStatus{Retry: 1}, scope != fts.ScopeSource && errno != eexist) // an FTS-side retry ran it
			check(reason, fts.FileStatus{StartTime: started}, scope != fts.ScopeSource && errno != eexist)
		}
	}
	for _, tc := range []struct {
		reason string
		wrote  bool // once started
	}{
		// the codes of the message decide the class, the scope the side
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", false},
		{"SOURCE [5] Source and user-defined ADLER32 checksum do not match (0a1b2c3d != 5e6f7a8b)", false},
		{"DESTINATION [5] Destination and user-defined ADLER32 checksum do not match (0a1b2c3d != 5e6f7a8b)", true},
		{"DESTINATION [5] Result HTTP 409 : Conflict", false}, // the destination exists, by its HTTP status
		{"TRANSFER [5] TRANSFER ERROR: Copy failed (3rd pull). Last attempt: copy HTTP 507 : Insufficient Storage", true},
		{"DESTINATION [13] Result curl error (60): SSL certificate problem: unable to get local issuer certificate", true},
		{"DESTINATION [13] Result HTTP 401 : Unauthorized", true},
		{"SOURCE [13] Result HTTP 401 : Unauthorized", false},
		{"TRANSFER [22] Error on XrdCl::CopyProcess::Run(): [ERROR] Server responded with an error: [3018] File exists", false},
		{"DESTINATION [28] DESTINATION [srm2__srmPrepareToPut] error reported from srm_ifce, [SE][PrepareToPut][SRM_NO_FREE_SPACE] No free space", true},
		// no scope: the server's own texts after url-copy started; only
		// a class that is itself a stall or cancel of the copy shows it
		{"Transfer has been forced-killed because it was stalled", false},
		{"Transfer canceled because the gsiftp performance marker timeout of 360 seconds has been exceeded, or all performance markers during that period indicated zero bytes transferred", true},
		{"Transfer canceled by the user", true},
		{"No such file or directory", false}, // a source missing by its text alone
		{"Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)", false},
		{"Protocol not supported", false},
		// the older format: its phase says when it failed
		{"DESTINATION error during TRANSFER_PREPARATION phase: [PERMISSION] permission denied", false},
		{"SOURCE error during TRANSFER phase: [GENERAL_FAILURE] read failed", false},
		{"TRANSFER error during TRANSFER phase: [GENERAL_FAILURE] write failed", true},
		{"DESTINATION error during TRANSFER phase: [FILE_EXISTS] the file exists", false},
	} {
		check(tc.reason, fts.FileStatus{}, false)
		check(tc.reason, fts.FileStatus{StartTime: started}, tc.wrote)
	}
	// the classes no FTS file reason gives: aso's own, and FTS's refusal
	// of a submission
	for _, c := range []state.ErrorClass{state.ClassDestinationBusy, state.ClassSameFile} {
		seen[c] = true
		if attemptWrote(&fts.FileStatus{StartTime: started, Retry: 1}, fts.Failure{Class: c}) {
			t.Errorf("class %s: wrote, want nothing written", c)
		}
	}
	for _, c := range state.ErrorClasses {
		if !seen[c] {
			t.Errorf("no case of error class %s", c)
		}
	}
}
