package state

import (
	"time"
)

// Archiver receives the transfers a purge removes, before they are removed.
type Archiver interface {
	// Write appends transfers to the archive.
	Write(ts []Transfer) error
	// Sync makes everything written so far durable (fsync).
	Sync() error
}

// PurgeOptions select the transfers Purge removes.
type PurgeOptions struct {
	// User whose transfers are removed; "" means every user.
	User string
	// Before: terminal transfers whose last update is strictly before it.
	Before time.Time
	// Archive, if set, receives every transfer before it is removed; a
	// transfer is removed only once Archive.Sync succeeded after it was
	// written, so nothing is lost if the archive fails.
	Archive Archiver
	// Progress, if set, is told how many transfers were removed so far,
	// after each bulk removal.
	Progress func(removed int)
}

// Purgeable reports whether o selects t: terminal (done, failed or killed),
// of o.User (any user when empty), last updated before o.Before.
func (o PurgeOptions) Purgeable(t *Transfer) bool {
	return t.State.Terminal() && (o.User == "" || t.User == o.User) && t.LastUpdate.Before(o.Before)
}

// PurgedReason is the reason of the last history entry of a transfer in
// the archive of a purge (see NotePurged).
const PurgedReason = "purged"

// NotePurged adds to each of ts, as the archive of a purge keeps it, a
// history entry saying who purged it (by) and when (now).
func NotePurged(ts []Transfer, by string, now time.Time) {
	for i := range ts {
		ts[i].Note(now, by, PurgedReason)
	}
}
