package agent

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// deletionRule is the one rule every deletion of a destination copy by the
// agent passes (the cleanup of a failed transfer and of a killed one): a
// copy is deleted only when aso's own records prove that this transfer
// wrote it. All of these must hold:
//   - the transfer recorded that it owns its destination before its first
//     submission (state.Transfer.DestOwnedSince);
//   - one of its attempts began writing there: this one (attemptWrote,
//     from FTS's start_time and the failure's scope, errno and class), or
//     an earlier one whose copy may remain (state.Transfer.DestWritten:
//     after a lost job or a deletion given up);
//   - no other transfer owns the destination now (state.DestRef.Owns: a
//     done one, or an active one that recorded its ownership), read
//     through the store's index by destination, once per batch.
//
// Anything else is left in place, and the reason says why ("left in
// place: ..."). The deleter's own last guard (the transfer's source is
// never a target) stays behind it.
type deletionRule struct {
	store Store
}

// candidate is a destination copy the agent would delete: its transfer,
// and whether the attempt that just ended began writing it.
type candidate struct {
	t     *state.Transfer
	wrote bool
}

// judge decides each of cs, in order: "" for a copy that may be deleted,
// else why it is left in place. The owners are read in one call; when
// they cannot be read, every copy is left in place (and the error said).
func (r deletionRule) judge(ctx context.Context, cs []candidate) []string {
	why := make([]string, len(cs))
	var dests []state.Destination
	for i, c := range cs {
		if why[i] = r.ownRecords(c); why[i] == "" {
			dests = append(dests, c.t.Dest())
		}
	}
	if len(dests) == 0 {
		return why
	}
	refs, err := r.store.DestinationRefs(ctx, dests)
	for i, c := range cs {
		if why[i] != "" {
			continue
		}
		if err != nil {
			why[i] = "left in place: who owns the destination could not be read (" + err.Error() + ")"
			continue
		}
		why[i] = otherOwner(c.t, refs[c.t.Dest()])
	}
	return why
}

// ownRecords checks the first two conditions of the rule on c's own
// records: "" when they hold, else why the copy is left in place.
func (deletionRule) ownRecords(c candidate) string {
	t := c.t
	switch {
	case t.DestPFN == "":
		return "left in place: the transfer names no destination PFN"
	case t.DestOwnedSince.IsZero():
		return "left in place: aso recorded no ownership of the destination before this transfer's first submission"
	case !c.wrote && t.DestWritten != t.DestPFN:
		return "left in place: no attempt of this transfer began writing there (FTS showed a source-side or pre-copy failure, or none)"
	}
	return ""
}

// otherOwner is why t's copy is left in place when a transfer other than
// t owns its destination among refs, else "".
func otherOwner(t *state.Transfer, refs []state.DestRef) string {
	for _, ref := range refs {
		if ref.ID != t.ID && ref.Owns() {
			return fmt.Sprintf("left in place: transfer %s (user %s, %s) owns the destination", ref.ID, ref.User, ref.State)
		}
	}
	return ""
}
