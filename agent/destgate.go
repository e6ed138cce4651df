package agent

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// destGate keeps a destination to one active owner at a time. Before the
// claimed transfers that have no submission yet are planned into jobs, it
// reads who names their destinations (one DestinationRefs call a pass)
// and takes out of the batch:
//   - a transfer whose destination another transfer owns and is still
//     active: it waits, back to new without an attempt counted until the
//     cool-off has passed, its reason naming the owner; never submitted
//     beside it. Of two claimed in one pass for one destination, the later
//     in claim order waits for the first;
//   - a transfer whose destination a done transfer owns with the same
//     adler32 (and size): recorded done, "already there", nothing copied.
//
// A done owner with another file is left to FTS, as before: it refuses to
// overwrite the file unless the run overwrites.
type destGate struct {
	store Store
}

// gated is what the gate took out of a batch.
type gated struct {
	waits []state.Abort
	dones []state.Terminal
}

// check returns the transfers of fresh that may be submitted, and what
// became of the others. When the owners cannot be read, nothing is
// submitted this pass (err).
func (g destGate) check(ctx context.Context, fresh []state.Transfer) ([]state.Transfer, gated, error) {
	var out gated
	if len(fresh) == 0 {
		return fresh, out, nil
	}
	dests := make([]state.Destination, len(fresh))
	for i := range fresh {
		dests[i] = fresh[i].Dest()
	}
	refs, err := g.store.DestinationRefs(ctx, dests)
	if err != nil {
		return nil, out, err
	}
	first := map[state.Destination]*state.Transfer{} // the first of each destination in this batch
	pass := fresh[:0:0]
	for i := range fresh {
		t := &fresh[i]
		switch owner, ok := state.OwnerOf(t.ID, refs[t.Dest()]); {
		case ok && !owner.State.Terminal():
			out.waits = append(out.waits, waitFor(t, owner.Describe()))
		case ok && state.SameContent(t.Checksum(), t.Size, owner):
			out.dones = append(out.dones, state.Terminal{Transfer: *t, Outcome: state.OutcomeDone,
				Reason: fmt.Sprintf("already there: transfer %s (user %s) is done with this file (adler32 %s); nothing copied", owner.ID, owner.User, owner.Adler32)})
		case first[t.Dest()] != nil:
			o := first[t.Dest()]
			out.waits = append(out.waits, waitFor(t, fmt.Sprintf("transfer %s (user %s, claimed in the same pass)", o.ID, o.User)))
		default:
			first[t.Dest()] = t
			pass = append(pass, *t)
		}
	}
	return pass, out, nil
}

// waitFor is the release of t while owner (described) owns its
// destination.
func waitFor(t *state.Transfer, owner string) state.Abort {
	return state.Abort{Transfer: *t, NoPenalty: true, Wait: true,
		Reason: "waiting: " + owner + " owns the destination; sent after it ends"}
}
