package state

import (
	"fmt"
	"strings"
	"time"
)

// OwnerKind says what a new request meets at its destination when it is
// enqueued (CheckOwner).
type OwnerKind uint8

// The values of OwnerKind.
const (
	// OwnerNone: no other transfer owns or owned the destination.
	OwnerNone OwnerKind = iota
	// OwnerActive: an active transfer owns it; the request is stored and
	// waits for it (the agent does not submit it beside the owner).
	OwnerActive
	// OwnerDoneSame: a done transfer delivered the same file there (adler32
	// and size); the request is stored and the agent records it done,
	// already there, without copying.
	OwnerDoneSame
	// OwnerDoneOther: a done transfer delivered another file there; the
	// request is refused unless it replaces the owner (Request.Replace).
	OwnerDoneOther
	// OwnerReplaced: as OwnerDoneOther, and the request replaces the owner.
	OwnerReplaced
	// OwnerSuperseded: the transfer that owned it failed or was killed;
	// the request supersedes it.
	OwnerSuperseded
)

// OwnerCheck is what CheckOwner found: the kind, and the owner it names
// (zero for OwnerNone).
type OwnerCheck struct {
	Kind  OwnerKind
	Owner DestRef
}

// CheckOwner is what r meets at its destination among refs (the transfers
// that name it, as DestinationRefs returns them). The identity of a
// destination is the agent's: its site and LFN.
func CheckOwner(r *Request, refs []DestRef) OwnerCheck {
	id := r.ID()
	for _, ref := range refs {
		if ref.ID == id { // stored already: Enqueue reports it already queued
			return OwnerCheck{}
		}
	}
	if o, ok := OwnerOf(id, refs); ok {
		switch {
		case !o.State.Terminal():
			return OwnerCheck{OwnerActive, o}
		case SameContent(r.checksum(), r.Size, o):
			return OwnerCheck{OwnerDoneSame, o}
		case r.Replace:
			return OwnerCheck{OwnerReplaced, o}
		default:
			return OwnerCheck{OwnerDoneOther, o}
		}
	}
	for _, ref := range refs {
		if ref.ID != id && ref.Owned && ref.SupersededBy == "" && (ref.State == StateFailed || ref.State == StateKilled) {
			return OwnerCheck{OwnerSuperseded, ref}
		}
	}
	return OwnerCheck{}
}

// OwnerOf is the transfer other than id that owns the destination among
// refs, if any: an active one first, then a done one that no other
// transfer replaced, then any done one.
func OwnerOf(id string, refs []DestRef) (DestRef, bool) {
	var done *DestRef
	for i := range refs {
		r := &refs[i]
		switch {
		case r.ID == id || !r.Owns():
		case !r.State.Terminal():
			return *r, true
		case done == nil || done.SupersededBy != "" && r.SupersededBy == "":
			done = r
		}
	}
	if done != nil {
		return *done, true
	}
	return DestRef{}, false
}

// SameContent: the done owner r delivered the file of adler32 sum (lower
// case) and size (its adler32, and its size when both give one).
func SameContent(sum string, size int64, r DestRef) bool {
	return sum != "" && strings.EqualFold(sum, r.Adler32) && (size == 0 || r.Size == 0 || size == r.Size)
}

// OwnerError refuses a request whose destination a done transfer owns with
// another file, and that does not replace it.
type OwnerError struct{ Owner DestRef }

func (e *OwnerError) Error() string {
	sum := e.Owner.Adler32
	if sum == "" {
		sum = "none recorded"
	}
	return fmt.Sprintf("destination owned by %s with another file (adler32 %s): refused; a request with \"replace\": true (or aso enqueue --replace) replaces it", e.Owner.Describe(), sum)
}

// Note is what the check adds to the new transfer's first history entry,
// or "" (OwnerNone, OwnerDoneOther).
func (c OwnerCheck) Note() string {
	switch c.Kind {
	case OwnerActive:
		return "waits for " + c.Owner.Describe() + ", which owns the destination"
	case OwnerDoneSame:
		return "already there: " + c.Owner.Describe() + " delivered this file (adler32 " + c.Owner.Adler32 + "); recorded done without copying when the agent claims it"
	case OwnerReplaced:
		return "replaces " + c.Owner.Describe() + ", which delivered another file there"
	case OwnerSuperseded:
		return "supersedes " + c.Owner.Describe() + " as the owner of the destination"
	}
	return ""
}

// EnqueueOwned is what an Enqueue does with a valid new request r, given
// the transfers refs that name its destination: the transfer to store,
// or the refusal (a *OwnerError), and the check.
func EnqueueOwned(r *Request, refs []DestRef, now time.Time, by string) (Transfer, OwnerCheck, error) {
	c := CheckOwner(r, refs)
	if c.Kind == OwnerDoneOther {
		return Transfer{}, c, &OwnerError{Owner: c.Owner}
	}
	t := NewTransfer(*r, now, by)
	if n := c.Note(); n != "" {
		t.History[0].Reason += "; " + n
	}
	return t, c, nil
}

// Supersedes reports whether the new transfer records itself on the
// owner c names (SupersedeOf): it replaces or supersedes it.
func (c OwnerCheck) Supersedes() bool {
	return c.Kind == OwnerReplaced || c.Kind == OwnerSuperseded
}

// The starts of the reason of the history entry SupersedeOf writes, each
// followed by the new transfer's ID.
const (
	ReplacedByPrefix   = "replaced by transfer "
	SupersededByPrefix = "superseded by transfer "
)

// SupersedeOf records on the ended transfer t that n, just enqueued for
// its destination, replaces it (t is done) or supersedes it (t failed or
// was killed) as the owner: SupersededBy names n, and one history entry
// says so, at now, by by. Nothing else of t changes. It reports whether
// it wrote: a transfer already superseded keeps its first record.
// ErrNotTerminal for a transfer that has not ended; ErrInvalid for n = t.
func SupersedeOf(t *Transfer, n *Transfer, now time.Time, by string) (bool, error) {
	switch {
	case !t.State.Terminal():
		return false, fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrNotTerminal)
	case n.ID == t.ID:
		return false, fmt.Errorf("transfer %s cannot supersede itself: %w", t.ID, ErrInvalid)
	case t.SupersededBy != "":
		return false, nil
	}
	why := SupersededByPrefix + n.ID + " (user " + n.User + "), the owner of the destination from now on"
	if t.State == StateDone {
		why = ReplacedByPrefix + n.ID + " (user " + n.User + "), which copies another file to the destination"
	}
	t.SupersededBy = n.ID
	t.Note(now, by, why)
	return true, nil
}
