package agent

import (
	"regexp"
)

// fatalReasons are FTS failure reasons that another attempt cannot fix: the
// transfer fails at once instead of returning to the queue. They extend the
// list AsyncStageOut learnt in production.
var fatalReasons = regexp.MustCompile(`(?i)` +
	`no such file or directory|` +
	`permission denied|operation not permitted|` +
	`quota exceeded|disk quota|does not have enough space|no space left|` +
	`checksum (do not match|mismatch)|checksums do not match|` +
	`file exists|overwrite is not enabled|` +
	`stayed in the queue for too long|max-time-in-queue|` +
	`mkdir\(\) fail|open/create error|is a directory|` +
	`proxy expired|certificate has expired`)

// Retryable reports whether a failure with this FTS reason may succeed on a
// later attempt. Unknown reasons are retryable; FTS has already retried
// recoverable errors itself, so this only decides whether aso tries again
// after its cool-off.
func Retryable(reason string) bool {
	return !fatalReasons.MatchString(reason)
}

// destinationExists matches the FTS failure of a transfer whose destination
// already existed: FTS did not write it, so it is not ours to delete.
var destinationExists = regexp.MustCompile(`(?i)\[17\]|file exists|overwrite is not enabled`)

// ownsDestination reports whether the destination copy of a failed transfer
// may be deleted: always, except when FTS refused because a file was already
// there (deleting it would destroy data aso did not write).
func ownsDestination(reason string) bool {
	return !destinationExists.MatchString(reason)
}
