package memfile

import (
	"errors"
	"time"
)

// ErrReadOnly is the error of a write to a Store opened with ReadOnly.
var ErrReadOnly = errors.New("the state file is open read-only")

// DefaultCompactBytes is the journal size below which a file is never compacted.
const DefaultCompactBytes = 4 << 20

// Options tune a Store beyond its state.Config.
type Options struct {
	// Warn receives warnings, such as a torn last record that was dropped.
	// nil discards them.
	Warn func(msg string)
	// CompactBytes: the journal is compacted once it is larger than both this
	// and twice the snapshot (0: DefaultCompactBytes).
	CompactBytes int64
	// Create creates the file and its directory when missing (see Open).
	// Without it, a missing file is an error wrapping ErrNoStore, and
	// nothing is created.
	Create bool
	// ReadOnly opens the file for reading only: a missing file is an error
	// (nothing is created), a file without write permission can be read,
	// the file is never changed (a torn last record is skipped, not cut
	// off), and every call that would write fails with ErrReadOnly.
	ReadOnly bool
	// LockWait bounds how long Open waits for the file's lock while
	// another process holds it (0: DefaultLockWait): a holder that hangs,
	// or was stopped in the middle of a write, must not block every later
	// run at its start.
	LockWait time.Duration
	// CacheBytes bounds the transfers a Store keeps decoded between calls,
	// those it last wrote or read, by their encoded size (0:
	// DefaultCacheBytes; negative: none are kept).
	CacheBytes int
}

// DefaultLockWait is Options.LockWait's default: far longer than any
// write or compaction holds the lock.
const DefaultLockWait = 2 * time.Minute
