package cmd

import (
	"context"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// readLocks reads the run locks (one read), at each round and before
// each refill of the slots from the backlog. It releases the lock of each
// ended agent that the read shows still held under the owner ID the fleet
// took it under (see releaseHandoff): an agent that released its own lock
// costs no request more. It puts in the backlog the users whose live run
// lock is held by an agent known dead (its process gone from this host:
// see holder.Of), whose agent takes the lock over at once and the claims
// of the dead one back, and the users whose lock another agent released
// since the round (see backlog.ranElsewhere). It replaces heldUntil with
// the users whose live lock another live holder holds (not this fleet's
// running agents or spare locks), and until when:
// they are left out even when discovery does not show the lock (another
// host took it since). If the read fails, the ended agents' locks are
// released one by one and what the fleet knew stays as it was.
func (f *fleet) readLocks(ctx context.Context) {
	locks, err := f.listLocks(ctx)
	f.learnLocks(ctx, locks, err)
}

// listLocks reads the run locks (one request); it changes nothing of the
// fleet's, so that it can run beside the loop (see refill).
func (f *fleet) listLocks(ctx context.Context) ([]state.LockDoc, error) {
	qctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	defer cancel()
	return f.lister.Locks(qctx, "")
}

// learnLocks is what the read of the locks (locks, or err) tells the
// fleet: see readLocks.
func (f *fleet) learnLocks(ctx context.Context, locks []state.LockDoc, err error) {
	if err != nil {
		f.log.WithError(err).Warn("cannot read the run locks; users whose lock is held wait for it to expire")
		for u, c := range f.unreleased {
			f.releaseHandoff(ctx, c)
			delete(f.unreleased, u)
		}
		return
	}
	now := time.Now()
	dead, held, fleets := map[string]state.LockDoc{}, map[string]time.Time{}, map[uint64]bool{}
	for _, l := range locks {
		if c := f.unreleased[l.User]; c != nil {
			delete(f.unreleased, l.User)
			if l.Holder == c.handoff.Owner && !l.Expire.IsZero() {
				f.releaseHandoff(ctx, c)
				continue
			}
		}
		switch {
		case f.agents.running[l.User] != nil || f.spares.has(l.User) || f.taking[l.User]:
		case !l.Expire.After(now):
			if ranElsewhereSince(l.LastRun, f.backlog.at) {
				f.backlog.ranElsewhere[l.User] = true
			}
			if l.LastRun != nil && l.LastRun.Ended.After(now.Add(-fleetMemory*f.o.Fleet.DiscoverInterval)) {
				addFleet(fleets, l.LastRun.Holder)
			}
		case holder.Of(l.Holder).State == holder.Gone:
			dead[l.User] = l
		default:
			held[l.User] = l.Expire.Time
			addFleet(fleets, l.Holder)
		}
	}
	clear(f.unreleased) // no lock document: nothing to release
	f.heldUntil, f.backlog.dead, f.backlog.fleets = held, dead, fleets
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

// fleetMemory is how many discovery intervals a fleet is known to others
// after its last agent released a lock: agents of many fleets often end
// at once, and a fleet that reads the locks just then still knows the
// others (see spread).
const fleetMemory = 3

// addFleet adds the place of the process that owner ID id names to
// fleets, unless it is this process.
func addFleet(fleets map[uint64]bool, id string) {
	if h, ok := state.ParseHolder(id); ok && h != holder.This() {
		fleets[fleetPlace(h)] = true
	}
}

// ranElsewhereSince reports whether run, the last run recorded on a lock,
// ended after t and was not one of this process's agents (which hold
// owner IDs of this process: see takeLock).
func ranElsewhereSince(run *state.RunRecord, t time.Time) bool {
	if run == nil || !run.Ended.After(t) {
		return false
	}
	h, ok := state.ParseHolder(run.Holder)
	return !ok || h != holder.This()
}
