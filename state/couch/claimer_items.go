package couch

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// InvalidReasonPrefix starts the reason of a transfer the agent moved to
// failed because its document does not validate; validate_doc_update lets
// exactly this move through for a document it would refuse otherwise.
const InvalidReasonPrefix = "invalid document: "

// quarantine returns the item that moves a queued transfer document that
// does not validate (err) to failed, keeping every field as it is (see
// salvage), so that it is never left waiting in silence.
func quarantine(raw json.RawMessage, err error, a state.Agent, now time.Time) (item, bool) {
	t, ok := salvage(raw)
	if !ok || (t.State != state.StateNew && t.State != state.StateAcquired) {
		return item{}, false
	}
	for _, f := range []string{"state", "reason", "last_update", "history"} {
		delete(t.Extra, f) // aso's own fields, written anew below
	}
	reason := InvalidReasonPrefix + err.Error()
	return item{id: t.ID, t: &t, rule: func(t *state.Transfer) (bool, error) {
		t.Transition(state.StateFailed, now, a.Owner, reason)
		return true, nil
	}}, true
}

// claimKind says what a claim's write does to one candidate.
type claimKind uint8

const (
	kindClaim    claimKind = iota // claimed for the agent
	kindSettle                    // ended: it can never run (dependency, kill request)
	kindInvalid                   // moved to failed: the document does not validate
	kindPassOver                  // left new, moved to the back of the queue: its link is at the cap
)

// claimItem is the claim of t for the agent.
func (c *claimer) claimItem(t *state.Transfer, now time.Time) item {
	a, ttl := c.agent, c.policy.LeaseTTL
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		return true, state.Claim(t, a, now, ttl)
	}}
}

// settleItem ends t, which can never run (state.SettleUnrunnable).
func (c *claimer) settleItem(t *state.Transfer, deps state.Deps, now time.Time) item {
	a := c.agent
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		if !state.Claimable(t, a.User, now) {
			return false, fmt.Errorf("transfer %s: %w", t.ID, state.ErrLeaseLost)
		}
		return state.SettleUnrunnable(t, deps, now, a.Owner), nil
	}}
}

// passOver moves t, a new transfer of a link at its cap, to the back of
// the queue: its last_update becomes now, plus n microseconds for the n-th
// passed over in this call, so that those passed over keep their order.
// Without the move the next claims would read the same head of the queue
// again and again while other links wait behind it.
func passOver(t *state.Transfer, now time.Time, n int) item {
	at := state.At(now.Add(time.Duration(n) * time.Microsecond))
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		if t.State != state.StateNew || t.RetryAfter.After(now) {
			return false, fmt.Errorf("transfer %s: %w", t.ID, state.ErrLeaseLost)
		}
		t.LastUpdate = at
		return true, nil
	}}
}

// claimedOf is what the write of items (of kinds) did, from its results.
func (c *claimer) claimedOf(items []item, kinds []claimKind, res []state.Result, now time.Time) state.Claimed {
	a, ttl := c.agent, c.policy.LeaseTTL
	var out state.Claimed
	for k, r := range res {
		if r.Err != nil {
			// refused, or claimed or settled by another agent; a claim
			// whose write lost or was not confirmed may still be due
			if kinds[k] == kindClaim && (errors.Is(r.Err, state.ErrConflict) || errors.Is(r.Err, state.ErrNotFound)) {
				out.Contended++
			}
			continue
		}
		t := cloneTransfer(items[k].t)
		switch kinds[k] {
		case kindClaim:
			_ = state.Claim(t, a, now, ttl)
			t.Rev = r.Rev
			out.Transfers = append(out.Transfers, *t)
		case kindSettle, kindInvalid:
			_, _ = items[k].rule(t)
			t.Rev = r.Rev
			out.Settled = append(out.Settled, *t)
		}
	}
	return out
}

// spread puts cands, in claim order, in state.SpreadOrder.
func spread(cands []state.Transfer) []state.Transfer {
	order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].Priority }, func(i int) string { return cands[i].Link() })
	out := make([]state.Transfer, len(order))
	for i, k := range order {
		out[i] = cands[k]
	}
	return out
}
