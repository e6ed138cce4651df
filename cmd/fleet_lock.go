package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
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

// takeLock takes the run lock of u for the agent the fleet is about to
// start, under an owner ID of this process (see agentID): if this process
// dies, its agents die with it (agentProcAttr) and the lock names a
// process gone from this host, which the next agent takes over. A lock
// held by a holder known dead is left to the agent, which takes it over
// and records why (no hand-over). A lock held by another live holder is a
// lost race: the user is left out of discovery until that lock expires
// (errLostRace). Any other error leaves the user for a later round.
func (f *fleet) takeLock(ctx context.Context, u string) (handoff, error) {
	if f.o.Agent.DryRun {
		return handoff{}, nil // a dry run takes no lock
	}
	owner := agentID()
	lctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	l, err := f.locker.AcquireLock(lctx, u, owner, f.o.Agent.LockTTL)
	cancel()
	var le *state.LockedError
	switch {
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
