package agent

import (
	"strings"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// classify decides what a failed FTS file means: its error class, from the
// reason's scope, errno and the codes its plugin gives (fts.Classify); the
// retry, from the class (FTS's recoverable flag, when the server sends it,
// decides failures no class explains); whether the destination copy is a
// candidate for deletion (clean: FTS ever started url-copy for the file,
// urlCopyRan, and the class does not say the destination was not written,
// state.ErrorClass.DestinationOurs); and whether the attempt began writing
// the destination (wrote, attemptWrote), which the deletion rule asks.
// FTS has already retried recoverable errors itself, so the retry only
// decides whether aso tries again after its cool-off.
func classify(f *fts.FileStatus, reason string) (class state.ErrorClass, retryable, clean, wrote bool) {
	c := fts.Classify(reason, f.Recoverable)
	return c.Class, c.Retryable, c.Class.DestinationOurs() && urlCopyRan(f), attemptWrote(f, c)
}

// attemptWrote reports whether FTS's record of the failed file f, whose
// reason classified as c, shows that the attempt began writing the
// destination: url-copy ran for it (urlCopyRan: a start_time, or an
// FTS-side retry), and its failure is in the transfer or the destination
// phase (scope TRANSFER, DESTINATION or GENERAL_FAILURE), or has no scope
// but is a stall or a cancel of the running copy, other than:
//   - "file exists" (errno EEXIST, class destination_exists): FTS refused
//     to overwrite what was there;
//   - a failure before the copy: a preparation phase (older reasons), a
//     queue expiry, a submission refused for a destination another
//     transfer writes, a transfer onto its own source;
//   - a failure on the source side (scope SOURCE, or a class of the
//     source: missing, refused): the copy never had data to write.
//
// The scope, errno and phase are FTS's structured fields, never the
// message's English.
func attemptWrote(f *fts.FileStatus, c fts.Failure) bool {
	r := c.Reason
	switch {
	case !urlCopyRan(f):
		return false
	case r.Scope == fts.ScopeSource, c.Class == state.ClassSourceMissing, c.Class == state.ClassSourcePermission:
		return false
	case r.Errno == eexist, !c.Class.DestinationOurs(), c.Class == state.ClassQueueExpired:
		return false
	case strings.Contains(r.Phase, "PREPARATION"):
		return false
	case r.Scope == "":
		// the server's own texts: a stall or a cancel of a running copy
		// says so; another (a source missing by its text) says no side
		return c.Class == state.ClassTimeout || c.Class == state.ClassCanceled
	}
	return true
}

// eexist is Linux's EEXIST, as FTS reports it.
const eexist = 17
