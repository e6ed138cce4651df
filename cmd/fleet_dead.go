package cmd

import (
	"context"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// readLocks reads the run locks, once per round. It returns the users
// whose live run lock is held by an agent known dead (its process gone
// from this host: see holder.Of), by user: their agent takes the lock
// over at once, and the claims of the dead one back. It replaces
// heldUntil with the users whose live lock another live holder holds, and
// until when: discovery leaves them out, even when its view does not show
// the lock yet (another host took it since the view was read). If the read
// fails, heldUntil stays as it was.
func (f *fleet) readLocks(ctx context.Context) map[string]state.LockDoc {
	qctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	defer cancel()
	locks, err := f.lister.Locks(qctx, "")
	if err != nil {
		f.log.WithError(err).Warn("cannot read the run locks; users whose lock is held wait for it to expire")
		return nil
	}
	now := time.Now()
	dead, held := map[string]state.LockDoc{}, map[string]time.Time{}
	for _, l := range locks {
		switch {
		case !l.Expire.After(now) || f.running[l.User] != nil:
		case holder.Of(l.Holder).State == holder.Gone:
			dead[l.User] = l
		default:
			held[l.User] = l.Expire.Time
		}
	}
	f.heldUntil = held
	return dead
}

// withDeadHolders adds to due the users whose lock a dead agent holds but
// who have no due work: what that agent claimed waits for its leases
// otherwise, while a new agent takes it back at once.
func withDeadHolders(due []state.UserDue, dead map[string]state.LockDoc) []state.UserDue {
	for u, l := range dead {
		if !slices.ContainsFunc(due, func(d state.UserDue) bool { return d.User == u }) {
			due = append(due, state.UserDue{User: u, Since: l.Since.Time, LockedUntil: l.Expire.Time})
		}
	}
	return due
}
