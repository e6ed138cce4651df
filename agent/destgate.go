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
//     in claim order waits for the first; of two that recorded their
//     ownership in earlier submissions, the one that recorded it later
//     (waitsFor);
//   - a transfer whose destination a done transfer owns with the same
//     adler32 (and size): recorded done, "already there", nothing copied.
//
// A done owner with another file is left to FTS, as before: it refuses to
// overwrite the file unless the run overwrites.
//
// Once the agent has recorded the ownership of those it submits, and
// before FTS sees them, recheck reads the owners again (one more call a
// pass), so that two agents that both passed check at once never both
// submit: on a CouchDB cluster nothing makes a write exclusive.
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
	batch := map[string]bool{}
	for i := range fresh {
		batch[fresh[i].ID] = true
	}
	pass := fresh[:0:0]
	for i := range fresh {
		t := &fresh[i]
		owner, ok := state.OwnerOf(t.ID, refs[t.Dest()])
		switch active, wait := waitsFor(t, refs[t.Dest()], batch); {
		case wait:
			out.waits = append(out.waits, waitFor(t, active.Describe()))
		case ok && owner.State.Terminal() && state.SameContent(t.Checksum(), t.Size, owner):
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

// waitsFor is the active transfer among refs that t must wait for, if
// any. One that has not recorded its ownership waits for any active
// owner. One that has (an earlier submission of it was released: a lost
// job, a refusal, a retry) waits for one that is submitted, acquired
// outside this batch, or that recorded its ownership first
// (state.YieldTo): two of them back in the queue never wait for each
// other.
func waitsFor(t *state.Transfer, refs []state.DestRef, batch map[string]bool) (state.DestRef, bool) {
	if t.DestOwnedSince.IsZero() {
		o, ok := state.OwnerOf(t.ID, refs)
		return o, ok && !o.State.Terminal()
	}
	if r, ok := state.YieldTo(t, refs); ok {
		return r, true
	}
	for _, r := range refs {
		if r.ID != t.ID && r.Owned && r.State == state.StateAcquired && !batch[r.ID] {
			return r, true
		}
	}
	return state.DestRef{}, false
}

// recheck reads again, once for the batch, who names the destinations of
// prepared, the transfers whose ownership the agent has just recorded
// (at owned) and that FTS has not seen yet. Two agents may both have
// passed check before either recorded its ownership; each reads the
// other's record now, and the one that recorded later (state.YieldTo)
// yields: it waits, its record of ownership cleared, its reason naming
// the other. When the owners cannot be read, every transfer yields (err).
func (g destGate) recheck(ctx context.Context, prepared []state.Transfer, owned state.Time) ([]state.Abort, error) {
	if len(prepared) == 0 {
		return nil, nil
	}
	dests := make([]state.Destination, len(prepared))
	for i := range prepared {
		dests[i] = prepared[i].Dest()
	}
	refs, err := g.store.DestinationRefs(ctx, dests)
	var out []state.Abort
	for i := range prepared {
		t := &prepared[i]
		r, yield := state.YieldTo(t, refs[t.Dest()])
		switch {
		case err != nil:
			out = append(out, state.Abort{Transfer: *t, NoPenalty: true, Disown: t.DestOwnedSince.Equal(owned.Time),
				Reason: "who owns the destination could not be read again before the submission (" + err.Error() + ")"})
		case yield:
			a := waitFor(t, r.Describe()+", which recorded its ownership first,")
			a.Disown = t.DestOwnedSince.Equal(owned.Time) // recorded in this pass: FTS never saw it
			out = append(out, a)
		}
	}
	return out, err
}

// waitFor is the release of t while owner (described) owns its
// destination.
func waitFor(t *state.Transfer, owner string) state.Abort {
	return state.Abort{Transfer: *t, NoPenalty: true, Wait: true,
		Reason: "waiting: " + owner + " owns the destination; sent after it ends"}
}
