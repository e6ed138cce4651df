package state

import (
	"fmt"
	"time"
)

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
