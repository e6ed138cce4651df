package cmd

import (
	"context"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// deadHolders returns the users whose live run lock is held by an agent
// known dead (its process gone from this host: see holder.Of), by user:
// their agent takes the lock over at once, and the claims of the dead one
// back. One read of the locks per round.
func (f *fleet) deadHolders(ctx context.Context) map[string]state.LockDoc {
	qctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	defer cancel()
	locks, err := f.lister.Locks(qctx, "")
	if err != nil {
		f.log.WithError(err).Warn("cannot read the run locks; users whose lock is held wait for it to expire")
		return nil
	}
	dead := map[string]state.LockDoc{}
	for _, l := range locks {
		if l.Expire.After(time.Now()) && holder.Of(l.Holder).State == holder.Gone {
			dead[l.User] = l
		}
	}
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
