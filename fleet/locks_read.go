package fleet

import (
	"context"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// list reads the run locks (one request); it changes nothing, so that it
// can run beside the fleet's loop (see refill).
func (l *locks) list(ctx context.Context) ([]state.LockDoc, error) {
	qctx, cancel := context.WithTimeout(ctx, l.cfg.PhaseTimeout)
	defer cancel()
	return l.lister.Locks(qctx, "")
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
func (l *locks) learn(ctx context.Context, locks []state.LockDoc, err error, ours func(string) bool, since time.Time) (news lockNews, ok bool) {
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
			if lk.LastRun != nil && lk.LastRun.Ended.After(now.Add(-fleetMemory*l.cfg.DiscoverInterval)) {
				addFleet(news.fleets, lk.LastRun.Holder)
			}
		case holder.Of(lk.Holder).TakeOver():
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
	if h, ok := holder.Parse(id); ok && h != holder.This() {
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
	h, ok := holder.Parse(run.Holder)
	return !ok || h != holder.This()
}
