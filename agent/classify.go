package agent

import (
	"github.com/asyncstageout/aso/fts"
)

// classify decides what a failed FTS file means: its error class, from the
// reason's scope, errno and the codes its plugin gives (fts.Classify); the
// retry, from the class (FTS's recoverable flag, when the server sends it,
// decides failures no class explains); and whether the destination copy is
// the transfer's own to delete (not when FTS refused to overwrite a file
// that was already there, nor when the transfer never left FTS's queue,
// unless an earlier attempt of FTS's ran and may have left a copy).
// FTS has already retried recoverable errors itself, so the retry only
// decides whether aso tries again after its cool-off.
func classify(f *fts.FileStatus, reason string) (class fts.ErrorClass, retryable, deleteDest bool) {
	c := fts.Classify(reason, f.Recoverable)
	return c.Class, c.Retryable, c.Class.DestinationOurs() || c.Class == fts.ClassQueueExpired && f.Retry > 0
}
