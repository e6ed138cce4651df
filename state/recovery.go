package state

import (
	"context"
	"fmt"
	"time"
)

// Recoverer is an optional ability of a Store, found with As:
// taking back at once the claims of an agent that died, instead of waiting
// for their leases to expire.
type Recoverer interface {
	// TakeBack is called by the holder of the live run lock l of l.User,
	// which therefore knows that no other agent of that user is alive. The
	// acquired transfers of l.User whose owner is not l.Holder and whose
	// lease has not expired get an expired lease (now), so that the next
	// NewTransfers claims them, in one bulk write; each one's history says
	// whose claim was taken back. A transfer that carries a submit_sid
	// keeps it: its submission may have reached FTS, and the agent that
	// claims it looks the job up by its deterministic ID before anything
	// else (never resubmits it blindly). It returns the transfers taken
	// back (as written). It fails with ErrLockLost, writing nothing, if l
	// is not the live lock of l.User.
	TakeBack(ctx context.Context, l Lock) ([]Transfer, error)
}

// TakeBackClaim applies TakeBack to t: it reports false (and leaves t
// alone) unless t is an acquired transfer of l.User under a live lease of
// an owner other than l.Holder.
func TakeBackClaim(t *Transfer, l Lock, now time.Time) bool {
	if t.User != l.User || t.State != StateAcquired || t.Owner == l.Holder || !t.LeaseExpires.After(now) {
		return false
	}
	reason := fmt.Sprintf("claim of %s taken back by %s, the holder of the run lock: %s is no longer running", t.Owner, l.Holder, t.Owner)
	if t.SubmitSID != "" {
		reason += fmt.Sprintf("; its submission %s is looked up in FTS before any resubmission", t.SubmitSID)
	}
	t.Transition(StateAcquired, now, l.Holder, reason)
	t.LeaseExpires = At(now)
	return true
}

// LockLive checks that the stored lock d is l, live at now.
func LockLive(d *LockDoc, l Lock, now time.Time) error {
	if d == nil || d.Holder != l.Holder || !d.Expire.After(now) {
		holder, exp := "", ""
		if d != nil {
			holder, exp = d.Holder, d.Expire.String()
		}
		return fmt.Errorf("run lock of %s is held by %q until %q, not by %s: %w", l.User, holder, exp, l.Holder, ErrLockLost)
	}
	return nil
}
