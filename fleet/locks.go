package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// handoff is a user's run lock that a fleet took for the agent it starts:
// the agent runs under Owner (--fleet-owner: see Handover), so that its own
// AcquireLock finds the lock live and its own.
type handoff struct {
	Owner string
	lock  state.Lock
}

// errLostRace is the refusal of a user's run lock to the fleet: another
// host took it since the discovery round; no agent is started.
var errLostRace = errors.New("the user's run lock is held elsewhere")

// errRanElsewhere is the fleet's own refusal of a user's run lock it took:
// another agent took and released the lock since the discovery round, so
// the user's entry in the backlog may be drained already; the lock is
// released again and the user waits for the next round.
var errRanElsewhere = errors.New("another agent ran for the user since the discovery round")

// take is one request for a user's run lock (see takeLock).
type take struct {
	user, owner string
	lock        state.Lock
	err         error
}

// locks is what a fleet knows of the users' run locks and does with
// them: it takes them for its agents and ahead of them (spares), releases
// those its agents left held, and learns from a read of them all which
// users other hosts hold. Its requests change nothing of its own, so
// that they can run beside the fleet's loop (see refill); what they
// answer is taken in by the loop.
type locks struct {
	cfg    *Config
	id     string // the fleet's agent ID, in the run records it writes
	log    *logrus.Entry
	locker locker
	lister interface {
		Locks(ctx context.Context, user string) ([]state.LockDoc, error)
	}
	// heldUntil holds users whose run lock another agent holds, as the
	// last read of the locks found it, or the fleet's take of the lock
	// since (a race lost): they are left out until that lock expires.
	heldUntil map[string]time.Time
	// unreleased holds, by user, the ended agents whose run lock the
	// fleet took for them and has not yet checked (see learn).
	unreleased map[string]*child
	// spares are run locks taken ahead for the next slots to free (see
	// spare).
	spares    spares
	lostRaces int
}

func newLocks(cfg *Config, id string, log *logrus.Entry, store Store) *locks {
	return &locks{cfg: cfg, id: id, log: log, locker: store, lister: store,
		heldUntil: map[string]time.Time{}, unreleased: map[string]*child{}}
}

// acquire asks for the run lock of u under a new owner ID of this
// process. It changes nothing of the fleet's, so that several run at once
// (see takeLocks).
func (l *locks) acquire(ctx context.Context, u string) take {
	t := take{user: u}
	if l.cfg.DryRun {
		return t // a dry run takes no lock
	}
	t.owner = holder.NewID()
	lctx, cancel := context.WithTimeout(ctx, l.cfg.PhaseTimeout)
	t.lock, t.err = l.locker.AcquireLock(lctx, u, t.owner, l.cfg.LockTTL)
	cancel()
	return t
}

// takeLocks asks for the run locks of users at once, their requests in
// flight together: the slots freed by agents that ended together are
// filled in the time of one take, not one after another.
func (l *locks) takeLocks(ctx context.Context, users []string) []take {
	out := make([]take, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = l.acquire(ctx, u)
		}()
	}
	wg.Wait()
	return out
}

// took is what the take t means (see takeLock), for a round that asked
// for the users at since: the lock handed to the agent, or why there is
// none.
func (l *locks) took(ctx context.Context, t take, since time.Time) (handoff, error) {
	if l.cfg.DryRun {
		return handoff{}, nil
	}
	u, owner, lk, err := t.user, t.owner, t.lock, t.err
	var le *state.LockedError
	switch {
	case err == nil && ranElsewhereSince(lk.LastRun, since):
		l.releaseLock(ctx, u, handoff{Owner: owner, lock: lk}, nil)
		return handoff{}, errRanElsewhere
	case err == nil:
		return handoff{Owner: owner, lock: lk}, nil
	case errors.As(err, &le):
		if holder.Of(le.Holder).TakeOver() {
			// the agent takes the lock over itself, recording why
			return handoff{}, nil
		}
		l.lostRaces++
		until := time.Now().Add(lockedBackoff(l.cfg))
		if t, perr := time.Parse(time.RFC3339Nano, le.Expire); perr == nil && t.After(until) {
			until = t
		}
		l.heldUntil[u] = until
		l.log.WithFields(logrus.Fields{agent.FieldUser: u, "holder": le.Holder, "lock_expires": le.Expire}).
			Info("another agent took this user's run lock since the last discovery round; no agent started")
		return handoff{}, errLostRace
	}
	l.log.WithError(err).WithField(agent.FieldUser, u).Warn("cannot take the user's run lock for its agent; trying again later")
	return handoff{}, err
}

// heldElsewhereNow reports whether the run lock of u was found held by
// another holder (this round's read of the locks, or takeLock since) and
// has not expired since.
func (l *locks) heldElsewhereNow(u string) bool {
	t, ok := l.heldUntil[u]
	if ok && !time.Now().Before(t) {
		delete(l.heldUntil, u)
		return false
	}
	return ok
}

// heldAtLeast records that the run lock of u is held elsewhere until at
// least until (a take lost the race: a read of the locks may lag it).
func (l *locks) heldAtLeast(u string, until time.Time) {
	if until.After(l.heldUntil[u]) {
		l.heldUntil[u] = until
	}
}

// agentEnded keeps the agent c, which ended under a lock the fleet took
// for it, until a read of the locks tells whether it released it (see
// learn).
func (l *locks) agentEnded(c *child) {
	if c.handoff.Owner != "" {
		l.unreleased[c.user.User] = c
	}
}

// releaseHandoff frees the lock the fleet took for the agent c once c has
// ended, recording c's end as the run. An agent that released the lock
// itself has recorded its own run, and this release then finds the lock
// no longer held and writes nothing (state.ErrLockLost); an agent that
// failed before it took the lock, or was killed, leaves it held under the
// fleet's owner ID, which names this live process: no one else could
// take it over before it expired.
func (l *locks) releaseHandoff(ctx context.Context, c *child) {
	l.releaseLock(ctx, c.user.User, c.handoff, &state.RunRecord{Holder: c.handoff.Owner, Started: state.At(c.started), Ended: state.At(c.ended), ExitCode: c.code, By: l.id,
		Error: fmt.Sprintf("the agent process ended (exit %d) without releasing the run lock the fleet took for it: %s", c.code, orUnknown(c.reason()))})
}

// releaseLock frees the run lock of user that the fleet took (h), if it
// is still held under h's owner ID, recording run.
func (l *locks) releaseLock(ctx context.Context, user string, h handoff, run *state.RunRecord) {
	if h.Owner == "" {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.PhaseTimeout)
	defer cancel()
	err := l.locker.ReleaseLock(rctx, h.lock, run)
	switch {
	case err == nil:
		l.log.WithFields(logrus.Fields{agent.FieldUser: user, "owner": h.Owner}).Info("released the run lock the fleet took for the agent")
	case !errors.Is(err, state.ErrLockLost):
		l.log.WithError(err).WithField(agent.FieldUser, user).Warn("cannot release the run lock the fleet took for the agent; it expires by itself")
	}
}

// locker takes and frees users' run locks for the fleet's agents.
type locker interface {
	AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error)
	ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error
}

// earliest is the earlier of a pending time (zero: none) and t.
func earliest(pending, t time.Time) time.Time {
	if pending.IsZero() || t.Before(pending) {
		return t
	}
	return pending
}

// spare is a user's run lock that the fleet took ahead, while every slot
// was busy, for the next slot to free: that slot starts the user's agent
// at once, with no request to the store between the end of one agent and
// the start of the next (the read of the locks and the take cost several
// round trips on a busy server). A fleet holds at most half as many as it
// has slots (spareRoom), of its own users only (see nextUsers); they are
// released when the fleet stops, and one held longer than half the lock's
// TTL is released rather than handed to an agent.
type spare struct {
	user  state.UserDue
	h     handoff
	taken time.Time
}

// spares are the fleet's spare locks, in the order they were taken (the
// backlog's).
type spares []spare

func (s *spares) add(u state.UserDue, h handoff) {
	*s = append(*s, spare{user: u, h: h, taken: time.Now()})
}

func (s spares) has(user string) bool {
	return slices.ContainsFunc(s, func(x spare) bool { return x.user.User == user })
}

// spareRoom is how many spare locks the fleet may take now.
func (l *locks) spareRoom() int {
	if l.cfg.DryRun {
		return 0 // a dry run takes no lock
	}
	return max(l.cfg.MaxAgents/2, 1) - len(l.spares)
}

// nextSpare releases the oldest spare locks while they are held too long
// to hand over, and returns the oldest of the others if a slot is free
// (ok false: none, or no free slot).
func (l *locks) nextSpare(ctx context.Context, free bool) (spare, bool) {
	for len(l.spares) > 0 {
		s := l.spares[0]
		old := s.old(l.cfg.LockTTL)
		if !old && !free {
			break
		}
		l.spares = l.spares[1:]
		if !old {
			return s, true
		}
		l.releaseLock(ctx, s.user.User, s.h, nil)
	}
	return spare{}, false
}

// old reports whether the spare lock s was taken too long ago to hand to an
// agent: it may expire before the agent renews it.
func (s spare) old(ttl time.Duration) bool { return time.Since(s.taken) >= ttl/2 }

// releaseSpares releases the spare locks, when the fleet stops.
func (l *locks) releaseSpares(ctx context.Context) {
	for _, s := range l.spares {
		l.releaseLock(ctx, s.user.User, s.h, nil)
	}
	l.spares = nil
}
