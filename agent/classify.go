package agent

import (
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// classify decides what a failed FTS file means: its error class, from the
// reason's scope, errno and the codes its plugin gives (fts.Classify); the
// retry, from the class (FTS's recoverable flag, when the server sends it,
// decides failures no class explains); and whether the destination copy is
// the transfer's own to delete: only if FTS ever started url-copy for the
// file (urlCopyRan), and not when the class says the destination was not
// written (state.ErrorClass.DestinationOurs), unless an earlier attempt of
// FTS's ran for a transfer that then expired in the queue.
// FTS has already retried recoverable errors itself, so the retry only
// decides whether aso tries again after its cool-off.
func classify(f *fts.FileStatus, reason string) (class state.ErrorClass, retryable, deleteDest bool) {
	c := fts.Classify(reason, f.Recoverable)
	ours := c.Class.DestinationOurs() || c.Class == state.ClassQueueExpired && f.Retry > 0
	return c.Class, c.Retryable, ours && urlCopyRan(f)
}
