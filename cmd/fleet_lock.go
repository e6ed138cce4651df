package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// handoff is a user's run lock that a fleet took for the agent it starts:
// the agent runs under Owner (hidden flag --fleet-owner), so that its own
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

// takeLock takes the run lock of u for the agent the fleet is about to
// start, under an owner ID of this process (see agentID): if this process
// dies, its agents die with it (agentProcAttr) and the lock names a
// process gone from this host, which the next agent takes over. A lock
// held by a holder known dead is left to the agent, which takes it over
// and records why (no hand-over). A lock held by another live holder is a
// lost race: the user is left out of discovery until that lock expires
// (errLostRace). Any other error leaves the user for a later round.
func (f *fleet) takeLock(ctx context.Context, u string) (handoff, error) {
	return f.tookLock(ctx, f.acquire(ctx, u))
}

// take is one request for a user's run lock (see takeLock).
type take struct {
	user, owner string
	lock        state.Lock
	err         error
}

// acquire asks for the run lock of u under a new owner ID of this
// process. It changes nothing of the fleet's, so that several run at once
// (see takeLocks).
func (f *fleet) acquire(ctx context.Context, u string) take {
	t := take{user: u}
	if f.o.Agent.DryRun {
		return t // a dry run takes no lock
	}
	t.owner = agentID()
	lctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	t.lock, t.err = f.locker.AcquireLock(lctx, u, t.owner, f.o.Agent.LockTTL)
	cancel()
	return t
}

// takeLocks asks for the run locks of users at once, their requests in
// flight together: the slots freed by agents that ended together are
// filled in the time of one take, not one after another.
func (f *fleet) takeLocks(ctx context.Context, users []string) []take {
	out := make([]take, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = f.acquire(ctx, u)
		}()
	}
	wg.Wait()
	return out
}

// tookLock is what the take t means for the fleet (see takeLock).
func (f *fleet) tookLock(ctx context.Context, t take) (handoff, error) {
	if f.o.Agent.DryRun {
		return handoff{}, nil
	}
	u, owner, l, err := t.user, t.owner, t.lock, t.err
	var le *state.LockedError
	switch {
	case err == nil && ranElsewhereSince(l.LastRun, f.backlog.at):
		f.backlog.ranElsewhere[u] = true
		f.releaseLock(ctx, u, handoff{Owner: owner, lock: l}, nil)
		return handoff{}, errRanElsewhere
	case err == nil:
		return handoff{Owner: owner, lock: l}, nil
	case errors.As(err, &le):
		if _, gone := holderGone(le.Holder); gone {
			// the agent takes the lock over itself, recording why
			return handoff{}, nil
		}
		f.lostRaces++
		until := time.Now().Add(f.lockedBackoff())
		if t, perr := time.Parse(time.RFC3339Nano, le.Expire); perr == nil && t.After(until) {
			until = t
		}
		f.heldUntil[u] = until
		f.log.WithFields(logrus.Fields{FieldUser: u, "holder": le.Holder, "lock_expires": le.Expire}).
			Info("another agent took this user's run lock since the last discovery round; no agent started")
		return handoff{}, errLostRace
	}
	f.notBefore[u] = time.Now().Add(f.o.Fleet.DiscoverInterval)
	f.log.WithError(err).WithField(FieldUser, u).Warn("cannot take the user's run lock for its agent; trying again later")
	return handoff{}, err
}

// heldElsewhereNow reports whether the run lock of u was found held by
// another holder (this round's read of the locks, or takeLock since) and
// has not expired since.
func (f *fleet) heldElsewhereNow(u string) bool {
	t, ok := f.heldUntil[u]
	if ok && !time.Now().Before(t) {
		delete(f.heldUntil, u)
		return false
	}
	return ok
}

// releaseHandoff frees the lock the fleet took for the agent c once c has
// ended, recording c's end as the run. An agent that released the lock
// itself has recorded its own run, and this release then finds the lock
// no longer held and writes nothing (state.ErrLockLost); an agent that
// failed before it took the lock, or was killed, leaves it held under the
// fleet's owner ID, which names this live process: no one else could
// take it over before it expired.
func (f *fleet) releaseHandoff(ctx context.Context, c *child) {
	f.releaseLock(ctx, c.user.User, c.handoff, &state.RunRecord{Holder: c.handoff.Owner, Started: state.At(c.started), Ended: state.At(c.ended), ExitCode: c.code, By: f.id,
		Error: fmt.Sprintf("the agent process ended (exit %d) without releasing the run lock the fleet took for it: %s", c.code, orUnknown(c.reason()))})
}

// releaseLock frees the run lock of user that the fleet took (h), if it
// is still held under h's owner ID, recording run.
func (f *fleet) releaseLock(ctx context.Context, user string, h handoff, run *state.RunRecord) {
	if h.Owner == "" {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.o.Agent.PhaseTimeout)
	defer cancel()
	err := f.locker.ReleaseLock(rctx, h.lock, run)
	switch {
	case err == nil:
		f.log.WithFields(logrus.Fields{FieldUser: user, "owner": h.Owner}).Info("released the run lock the fleet took for the agent")
	case !errors.Is(err, state.ErrLockLost):
		f.log.WithError(err).WithField(FieldUser, user).Warn("cannot release the run lock the fleet took for the agent; it expires by itself")
	}
}

// fleetLocker takes and frees users' run locks for the fleet's agents.
type fleetLocker interface {
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

// runOwner is the owner ID of the agent of a run: the one the fleet took
// the user's run lock under (--fleet-owner, an agent of a fleet only), or
// a new one of this process.
func runOwner(fo *FleetOptions) (string, error) {
	if fo.Owner == "" {
		return agentID(), nil
	}
	if !fo.Agent {
		return "", usagef("--fleet-owner is set by --all-users on its agents only (with --fleet-agent)")
	}
	if _, ok := state.ParseHolder(fo.Owner); !ok {
		return "", usagef("--fleet-owner %q: not an agent owner ID (host:pid:start-machine-random)", fo.Owner)
	}
	return fo.Owner, nil
}

// fleetChecked is what the fleet that started this agent found when it
// opened CouchDB (--fleet-read-quorum and --fleet-couch-identity, an agent
// of a fleet only), nil if
// it was not given: the agent then opens the database without asking
// again and does not check its credentials' role, which the fleet did
// with the same credentials.
func fleetChecked(fo *FleetOptions) (*couch.Checked, error) {
	switch {
	case fo.ReadQuorum < 0:
		return nil, nil
	case !fo.Agent:
		return nil, usagef("--fleet-read-quorum is set by --all-users on its agents only (with --fleet-agent)")
	}
	c := &couch.Checked{ReadQuorum: fo.ReadQuorum}
	if fo.Identity != "" {
		if err := json.Unmarshal([]byte(fo.Identity), &c.Identity); err != nil {
			return nil, usagef("--fleet-couch-identity %q: %v", fo.Identity, err)
		}
	}
	return c, nil
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
func (f *fleet) spareRoom() int {
	if f.o.Agent.DryRun {
		return 0 // a dry run takes no lock
	}
	return max(f.o.Fleet.MaxAgents/2, 1) - len(f.spares)
}

// startSpares starts the agents of the spare locks in the free slots, the
// oldest first, and releases those held too long to hand over; it returns
// how many it started.
func (f *fleet) startSpares(ctx context.Context, byRound bool) int {
	started := 0
	for len(f.spares) > 0 && (f.agents.free() > 0 || f.spares[0].old(f.o.Agent.LockTTL)) {
		s := f.spares[0]
		f.spares = f.spares[1:]
		if s.old(f.o.Agent.LockTTL) {
			f.releaseLock(ctx, s.user.User, s.h, nil)
			continue
		}
		if f.start1(ctx, s.user, s.h, byRound) {
			started++
		}
	}
	return started
}

// old reports whether the spare lock s was taken too long ago to hand to an
// agent: it may expire before the agent renews it.
func (s spare) old(ttl time.Duration) bool { return time.Since(s.taken) >= ttl/2 }

// releaseSpares releases the spare locks, when the fleet stops.
func (f *fleet) releaseSpares(ctx context.Context) {
	for _, s := range f.spares {
		f.releaseLock(ctx, s.user.User, s.h, nil)
	}
	f.spares = nil
}
