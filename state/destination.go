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
	// Adler32 is the transfer's adler32 checksum in lower case, or "".
	Adler32 string
	Size    int64
	// SupersededBy is the transfer that replaced or superseded this one
	// as the owner (Transfer.SupersededBy), or "".
	SupersededBy string
}

// RefOf returns the DestRef of t.
func RefOf(t *Transfer) DestRef {
	return DestRef{ID: t.ID, User: t.User, State: t.State, Owned: !t.DestOwnedSince.IsZero(), Adler32: t.Checksum(), Size: t.Size,
		SupersededBy: t.SupersededBy}
}

// Owns reports whether the transfer owns its destination now: a done one
// (its file is there, whatever version wrote it), or one still active
// (new, acquired or submitted) that recorded its ownership. A failed or
// killed transfer owns nothing: the next request for its destination
// supersedes it.
func (r DestRef) Owns() bool {
	return r.State == StateDone || !r.State.Terminal() && r.Owned
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
