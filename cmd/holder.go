package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// agentID is this process's owner ID (see holder.NewID).
func agentID() string { return holder.NewID() }

// holderGone tells an agent whether the holder of the lock it wants is
// known dead, so that it takes the lock over at once.
func holderGone(id string) (string, bool) {
	c := holder.Of(id)
	return c.Why, c.State == holder.Gone
}

// lockedError explains a run refused because the lock of user is held
// (err wraps a *state.LockedError): who holds it, whether it runs, and,
// when it looks dead, how to release it. It keeps err's exit code (3).
func lockedError(err error, user string, now time.Time, ttl time.Duration) error {
	var le *state.LockedError
	if !errors.As(err, &le) {
		return err
	}
	c := holder.Of(le.Holder)
	msg := fmt.Sprintf("the run lock of %s is held by %s until %s: %s", user, le.Holder, le.Expire, c.Why)
	exp, perr := time.Parse(time.RFC3339Nano, le.Expire)
	stale := perr == nil && exp.Sub(now) < ttl/3 // renewed every third of the TTL: one renewal at least was missed
	switch {
	case c.State == holder.Running && !stale:
		msg += "; that agent is working on this queue"
	case c.State == holder.Stopped:
		msg += "; that agent is stopped, not dead (SIGSTOP, or a debugger): kill -CONT resumes it; its lock is not taken over while it is valid, and a run after it expires takes it"
	case c.State == holder.Running:
		msg += fmt.Sprintf("; it looks dead (not renewed for a while); if it is, `aso unlock %s --force` releases the lock (else it expires by itself)", user)
	default:
		msg += fmt.Sprintf("; if that agent is dead, `aso unlock %s --force` releases the lock now (else it expires by itself)", user)
	}
	return fmt.Errorf("%s: %w", msg, state.ErrLocked)
}
