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
	locks, err := f.locks.list(ctx)
	f.learnLocks(ctx, locks, err)
}

// list reads the run locks (one request); it changes nothing, so that it
// can run beside the fleet's loop (see refill).
func (l *fleetLocks) list(ctx context.Context) ([]state.LockDoc, error) {
	qctx, cancel := context.WithTimeout(ctx, l.o.Agent.PhaseTimeout)
	defer cancel()
	return l.lister.Locks(qctx, "")
}

// learnLocks is what the read of the locks (locks, or err) tells the
// fleet: see readLocks.
func (f *fleet) learnLocks(ctx context.Context, locks []state.LockDoc, err error) {
	ours := func(u string) bool { return f.agents.running[u] != nil || f.locks.spares.has(u) || f.taking[u] }
	news, ok := f.locks.learn(ctx, locks, err, ours, f.backlog.at)
	if !ok {
		return
	}
	for _, u := range news.ranElsewhere {
		f.backlog.ranElsewhere[u] = true
	}
	f.backlog.dead, f.backlog.fleets = news.dead, news.fleets
}

// lockNews is what a read of the locks tells the backlog: the users whose
// live lock an agent known dead holds, the fleets that hold live locks or
// released one lately, and the users another agent ran for since the
// round.
type lockNews struct {
	dead         map[string]state.LockDoc
	fleets       map[uint64]bool
	ranElsewhere []string
}

// learn takes in the read of the locks (locks, or err) for a round that
// asked for the users at since, ours telling the users the fleet runs or
// takes the locks of: it releases the locks that ended agents left held
// and replaces heldUntil (see readLocks). ok is false when the read
// failed: the ended agents' locks are released one by one, and what the
// fleet knew stays as it was.
func (l *fleetLocks) learn(ctx context.Context, locks []state.LockDoc, err error, ours func(string) bool, since time.Time) (news lockNews, ok bool) {
	if err != nil {
		l.log.WithError(err).Warn("cannot read the run locks; users whose lock is held wait for it to expire")
		for u, c := range l.unreleased {
			l.releaseHandoff(ctx, c)
			delete(l.unreleased, u)
		}
		return lockNews{}, false
	}
	now := time.Now()
	news = lockNews{dead: map[string]state.LockDoc{}, fleets: map[uint64]bool{}}
	held := map[string]time.Time{}
	for _, lk := range locks {
		if c := l.unreleased[lk.User]; c != nil {
			delete(l.unreleased, lk.User)
			if lk.Holder == c.handoff.Owner && !lk.Expire.IsZero() {
				l.releaseHandoff(ctx, c)
				continue
			}
		}
		switch {
		case ours(lk.User):
		case !lk.Expire.After(now):
			if ranElsewhereSince(lk.LastRun, since) {
				news.ranElsewhere = append(news.ranElsewhere, lk.User)
			}
			if lk.LastRun != nil && lk.LastRun.Ended.After(now.Add(-fleetMemory*l.o.Fleet.DiscoverInterval)) {
				addFleet(news.fleets, lk.LastRun.Holder)
			}
		case holder.Of(lk.Holder).State == holder.Gone:
			news.dead[lk.User] = lk
		default:
			held[lk.User] = lk.Expire.Time
			addFleet(news.fleets, lk.Holder)
		}
	}
	clear(l.unreleased) // no lock document: nothing to release
	l.heldUntil = held
	return news, true
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
