package fleet

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/state"
)

// backlog is what the last discovery round found: the users with due work
// in this fleet's order (see spread), and what the latest read of the run
// locks says about them. Slots freed between rounds are filled from it.
type backlog struct {
	due []state.UserDue
	// at is when the round asked for due (this host's clock).
	at time.Time
	// dead holds the users whose live lock an agent known dead holds
	// (see readLocks).
	dead map[string]state.LockDoc
	// ranElsewhere holds the users whose lock another agent took and
	// released since the round: their entry may be drained already, and
	// waits for the next round rather than start an agent with nothing to do.
	ranElsewhere map[string]bool
	// fleets holds the places (see fleetPlace) of the other processes
	// that hold live run locks or released one lately (see fleetMemory):
	// other hosts' fleets, for spread.
	fleets map[uint64]bool
	// others holds the users of due that belong to another fleet (see
	// spread): fill asks for one such lock at a time, since their owner
	// may be taking them too.
	others map[string]bool
}

// round takes the answer d of a discovery query and the run locks (one
// read), keeps them as the backlog, and starts agents for as many as
// there are free slots; while agents run, the read of the locks and their
// takes run beside the loop (see refill). It returns how many it started and, when a due
// user was left waiting for a retry time, the earliest such time.
func (f *Fleet) round(ctx context.Context, d discovery) (int, time.Time, error) {
	if d.err != nil {
		return 0, time.Time{}, d.err
	}
	last := f.backlog
	f.backlog = backlog{at: d.at, ranElsewhere: map[string]bool{}}
	beside := len(f.slots.running) > 0
	if beside {
		// agents run: the locks are read and taken beside the loop, as for
		// a refill, with what the last read of them found until then
		f.backlog.dead, f.backlog.fleets = last.dead, last.fleets
	} else {
		f.readLocks(ctx)
	}
	due := withDeadHolders(f.skipped.named(d.due), f.backlog.dead)
	f.spread(due)
	if f.cfg.View != nil {
		f.cfg.View.Round(due)
	}
	f.backlog.due = due
	if beside {
		started, pending := f.refill(ctx)
		return started, pending, nil
	}
	started, pending := f.fill(ctx, true)
	f.log.WithFields(logrus.Fields{"due_users": len(due), "started": started, "running": len(f.slots.running)}).Debug("discovery round")
	return started, pending, nil
}

// refill starts agents in the free slots between rounds: first those of
// the spare locks, at once (no request), then, beside the loop (see
// lockWork), from the backlog and for new spares, once a read of the run
// locks has brought what the backlog knows of them up to date (other hosts
// take users all the time) and released the locks of ended agents that
// did not release their own. It reads nothing when there is nothing to
// release and no user of the backlog could be started or taken ahead. It
// returns how many it started and the earliest retry time of a user of the
// backlog waiting for one.
func (f *Fleet) refill(ctx context.Context) (int, time.Time) {
	started := f.startSpares(ctx, false)
	if f.taking != nil {
		return started, f.tally() // the lock requests of the last refill are under way
	}
	room := f.wanted() > 0 && slices.ContainsFunc(f.backlog.due, f.startable)
	if !room && len(f.locks.unreleased) == 0 {
		return started, f.tally()
	}
	f.taking = map[string]bool{}
	go func() {
		locks, err := f.locks.list(ctx)
		f.lockDone <- lockWork{locks: locks, err: err, read: true}
	}()
	return started, f.tally()
}

// lockWork is the answer of the lock requests that a refill runs beside
// the loop, one at a time: a read of the locks (read), then the takes of
// the locks of the users it chose (batch) for the free slots and spares.
// The users of batch are in f.taking until their takes answer.
type lockWork struct {
	read  bool
	locks []state.LockDoc
	err   error
	batch []state.UserDue
	takes []take
}

// lockAnswer is what the loop does with the answer w of a refill's lock
// requests: after the read, it learns from the locks and asks for the
// locks of the next users; after the takes, it starts the agents of those
// it took while slots are free and keeps the others as spares.
func (f *Fleet) lockAnswer(ctx context.Context, w lockWork) {
	if w.read {
		f.learnLocks(ctx, w.locks, w.err)
		if ctx.Err() != nil || f.slots.pastStop() {
			f.taking = nil // stopping: no lock is asked for
			return
		}
		f.backlog.due = withDeadHolders(f.backlog.due, f.backlog.dead)
		f.spread(f.backlog.due) // the fleets known may have changed
		batch, names := f.nextBatch(map[string]bool{})
		if len(batch) == 0 {
			f.taking = nil
			return
		}
		for _, u := range names {
			f.taking[u] = true
		}
		go func() { f.lockDone <- lockWork{batch: batch, takes: f.locks.takeLocks(ctx, names)} }()
		return
	}
	f.taking = nil
	if ctx.Err() != nil || f.slots.pastStop() {
		for _, t := range w.takes {
			if h, err := f.tookLock(ctx, t); err == nil {
				f.locks.releaseLock(ctx, t.user, h, nil) // stopping: no agent starts
			}
		}
		return
	}
	f.useTakes(ctx, w.batch, w.takes, false)
}

// wanted is how many run locks fill would ask for now: one for each free
// slot and each spare lock missing.
func (f *Fleet) wanted() int {
	return f.slots.free() + f.locks.spareRoom()
}

// startable reports whether what the fleet knows lets it start an agent
// for u now: not running here, not done, not drained with this very
// entry, not held elsewhere (unless by a dead holder), not run elsewhere
// since the round, and not waiting for a retry time.
func (f *Fleet) startable(u state.UserDue) bool {
	return f.skip(u) == skipNone
}

// skipReason is why fill leaves a user of the backlog alone.
type skipReason int

const (
	skipNone    skipReason = iota
	skipOurs               // running here, done, or drained with this entry
	skipHeld               // an agent elsewhere holds the user's lock
	skipPending            // waiting for its retry time
)

func (f *Fleet) skip(u state.UserDue) skipReason {
	last, drained := f.drained[u.User]
	switch {
	case f.slots.running[u.User] != nil || f.done[u.User] || f.backlog.ranElsewhere[u.User] || f.locks.spares.has(u.User) || f.taking[u.User]:
		return skipOurs
	case drained && sameDue(last, u):
		return skipOurs
	}
	if _, gone := f.backlog.dead[u.User]; !gone && (u.LockedUntil.After(time.Now()) || f.locks.heldElsewhereNow(u.User)) {
		// an agent elsewhere works on it (the view or a read of the locks
		// says so); if that agent dies, the lock expires and a later round
		// (or run) takes the user
		return skipHeld
	}
	if t, ok := f.notBefore[u.User]; ok && time.Now().Before(t) {
		return skipPending
	}
	return skipNone
}

// fill starts agents for the users of the backlog, in its order, while
// slots are free, for a round (byRound) or a refill, and takes spare
// locks ahead (see spare) for the users that come next: it asks for as
// many locks as there are free slots and spares missing at once (see
// takeLocks), then for the next ones if some were lost. It returns how
// many it started and the earliest retry time of a user left waiting for
// one.
func (f *Fleet) fill(ctx context.Context, byRound bool) (int, time.Time) {
	started := f.startSpares(ctx, byRound)
	tried := map[string]bool{}
	for {
		batch, names := f.nextBatch(tried)
		if len(batch) == 0 {
			break
		}
		n, lost := f.useTakes(ctx, batch, f.locks.takeLocks(ctx, names), byRound)
		started += n
		if len(lost) > 0 {
			// another fleet works here: learn what it took since the last
			// read, rather than lose the race for each of those users
			f.readLocks(ctx)
			for u, until := range lost {
				f.locks.heldAtLeast(u, until) // the read may lag the take
			}
		}
	}
	return started, f.tally()
}

// nextBatch returns the users (and their names) whose locks fill or a
// refill asks for next, marking them tried: one for each free slot that no
// spare lock fills, then one for each spare lock missing.
func (f *Fleet) nextBatch(tried map[string]bool) ([]state.UserDue, []string) {
	batch := f.nextUsers(f.slots.free()-len(f.locks.spares), tried, false)
	batch = append(batch, f.nextUsers(f.locks.spareRoom(), tried, true)...)
	names := make([]string, len(batch))
	for i, u := range batch {
		names[i] = u.User
	}
	return batch, names
}

// useTakes acts on the takes of the locks of batch (in its order): it
// starts the agents of the users whose lock it took while slots are free
// and keeps the others' locks as spares. It returns how many it started,
// and the users whose take lost a race, with until when their lock is
// known held.
func (f *Fleet) useTakes(ctx context.Context, batch []state.UserDue, takes []take, byRound bool) (int, map[string]time.Time) {
	started, lost := 0, map[string]time.Time{}
	for i, t := range takes {
		h, err := f.tookLock(ctx, t)
		switch {
		case errors.Is(err, errLostRace):
			lost[t.user] = f.locks.heldUntil[t.user]
		case err != nil:
		case f.slots.free() > 0:
			if f.start1(ctx, batch[i], h, byRound) {
				started++
			}
		default:
			f.locks.spares.add(batch[i], h)
		}
	}
	return started, lost
}

// nextUsers returns up to n users of the backlog that the fleet could
// start now and has not tried in this fill, marking them tried; of the
// users of other fleets, one at most, and none if ownOnly (spare locks
// are taken of the fleet's own users only: a fleet does not hold ahead
// what another fleet may be starting now).
func (f *Fleet) nextUsers(n int, tried map[string]bool, ownOnly bool) []state.UserDue {
	var out []state.UserDue
	other := ownOnly
	for _, u := range f.backlog.due {
		if len(out) >= n {
			break
		}
		if tried[u.User] || !f.startable(u) || (other && f.backlog.others[u.User]) {
			continue
		}
		tried[u.User] = true
		other = other || f.backlog.others[u.User]
		out = append(out, u)
	}
	return out
}

// start1 starts the agent of u under the lock h the fleet took for it; if
// it cannot, it frees the lock and does not run the user again.
func (f *Fleet) start1(ctx context.Context, u state.UserDue, h handoff, byRound bool) bool {
	err := f.slots.start(ctx, u, h, byRound)
	if err == nil {
		return true
	}
	f.log.WithError(err).WithField(agent.FieldUser, u.User).Error("cannot start the agent of this user")
	f.locks.releaseLock(ctx, u.User, h, &state.RunRecord{Holder: h.Owner, Started: state.At(time.Now()), Ended: state.At(time.Now()), ExitCode: exitcode.Error,
		Error: "the fleet could not start the agent: " + err.Error()})
	f.done[u.User] = true
	f.outcome.note(exitcode.Error)
	return false
}

// tally counts the users of the backlog left alone because an agent
// elsewhere holds their lock (heldElsewhere), and returns the earliest
// retry time of those waiting for one (zero: none).
func (f *Fleet) tally() time.Time {
	var pending time.Time
	f.heldElsewhere = 0
	for _, u := range f.backlog.due {
		switch f.skip(u) {
		case skipHeld:
			f.heldElsewhere++
		case skipPending:
			pending = earliest(pending, f.notBefore[u.User])
		}
	}
	return pending
}
