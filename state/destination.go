package state

import (
	"context"
	"fmt"
)

// Destination names the file a transfer writes: its destination site and
// LFN, the key of ownership (see DestRef).
type Destination struct {
	Site string
	LFN  string
}

// DestRef is a stored transfer that names a destination, as
// DestinationReader.DestinationRefs returns it: enough to say whether it
// owns the file there and what that file should be.
type DestRef struct {
	ID    string
	User  string
	State State
	// Owned: the transfer recorded that it owns its destination
	// (Transfer.DestOwnedSince) before its first submission.
	Owned bool
	// OwnedSince is Transfer.DestOwnedSince (zero when not Owned, or
	// from a view of an older version).
	OwnedSince Time
	// Adler32 is the transfer's adler32 checksum in lower case, or "".
	Adler32 string
	Size    int64
	// SupersededBy is the transfer that replaced or superseded this one
	// as the owner (Transfer.SupersededBy), or "".
	SupersededBy string
}

// RefOf returns the DestRef of t.
func RefOf(t *Transfer) DestRef {
	return DestRef{ID: t.ID, User: t.User, State: t.State, Owned: !t.DestOwnedSince.IsZero(), OwnedSince: t.DestOwnedSince,
		Adler32: t.Checksum(), Size: t.Size, SupersededBy: t.SupersededBy}
}

// Owns reports whether the transfer owns its destination now: a done one
// (its file is there, whatever version wrote it), or one still active
// (new, acquired or submitted) that recorded its ownership. A failed or
// killed transfer owns nothing: the next request for its destination
// supersedes it.
func (r DestRef) Owns() bool {
	return r.State == StateDone || !r.State.Terminal() && r.Owned
}

// YieldTo is the transfer among refs that t, which has just recorded its
// ownership of its destination (DestOwnedSince) and is about to be
// submitted, must yield the destination to, if any: another active
// transfer that is submitted, or that recorded its ownership first
// (earlier, or at the same time with a lower ID). Of two transfers that
// both passed the check of the owners before either recorded its
// ownership (two agents, or a producer's direct write), exactly one
// yields to the other when both read the other's record.
func YieldTo(t *Transfer, refs []DestRef) (DestRef, bool) {
	for _, r := range refs {
		if r.ID == t.ID || r.State.Terminal() || !r.Owned {
			continue
		}
		// a view of an older version gives no time: not first
		first := !r.OwnedSince.IsZero() && (r.OwnedSince.Before(t.DestOwnedSince.Time) || r.OwnedSince.Equal(t.DestOwnedSince.Time) && r.ID < t.ID)
		if r.State == StateSubmitted || first {
			return r, true
		}
	}
	return DestRef{}, false
}

// Describe names the owner: "transfer ID (user U, STATE)".
func (r DestRef) Describe() string {
	return fmt.Sprintf("transfer %s (user %s, %s)", r.ID, r.User, r.State)
}

// DestinationReader reads the transfers that name destinations.
type DestinationReader interface {
	// DestinationRefs returns, for each of dests, every stored transfer
	// that names it (of any user and state), in one backend query keyed by
	// destination (a view on CouchDB): never a scan of the database. A
	// destination no transfer names has no entry. A purged transfer names
	// nothing.
	DestinationRefs(ctx context.Context, dests []Destination) (map[Destination][]DestRef, error)
}

// DestCopy says, in a Terminal, what became of the copy the attempt may
// have left at Transfer.DestPFN: it sets or clears Transfer.DestWritten.
type DestCopy uint8

// The values of DestCopy.
const (
	// CopyUnchanged leaves DestWritten as it is.
	CopyUnchanged DestCopy = iota
	// CopyLeft: the attempt began writing DestPFN and its copy may
	// remain there (a deletion given up, a lost job that had moved bytes).
	CopyLeft
	// CopyGone: aso deleted the copy at DestPFN, or found it gone.
	CopyGone
)

// apply records c on t.
func (c DestCopy) apply(t *Transfer) {
	switch c {
	case CopyLeft:
		t.DestWritten = t.DestPFN
	case CopyGone:
		t.DestWritten = ""
	}
}

// The roles in which a transfer names a PFN (PFNRef.Role).
const (
	RoleSource      = "source"
	RoleDestination = "destination"
)

// PFNRef is a stored transfer that names a PFN as its source or its
// destination (the PFNs a submission recorded), as PFNRefs returns it.
type PFNRef struct {
	PFN   string
	Role  string // RoleSource or RoleDestination
	ID    string
	User  string
	State State
}

// PFNReader reads the transfers that name PFNs.
type PFNReader interface {
	// PFNRefs returns the stored transfers whose source_pfn or dest_pfn
	// is one of pfns, as written (a transfer never submitted has none), in
	// one backend query keyed by PFN: never a scan of the database. The
	// order is that of pfns, then source before destination, then by ID.
	PFNRefs(ctx context.Context, pfns []string) ([]PFNRef, error)
}
