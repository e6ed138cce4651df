package statusview

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// LockView is a user's run lock as `aso status` shows it.
type LockView struct {
	User string `json:"user"`
	// Holder is the agent that took the lock last (host:pid:start-machine-random),
	// with its host and process ID; Held says whether it still holds it
	// (not released, not expired).
	Holder  string     `json:"holder,omitempty"`
	Host    string     `json:"host,omitempty"`
	PID     int        `json:"pid,omitempty"`
	Held    bool       `json:"held"`
	Since   state.Time `json:"since,omitzero"`
	Expires state.Time `json:"expires,omitzero"`
	// Process says, for a held lock, what this host can tell of its
	// holder's process: "running" or "stopped" on this host, "dead" (it ran
	// on this host and is gone: the next run takes the lock over at once),
	// or "unknown" (another host); Check says why.
	Process string `json:"process,omitempty"`
	Check   string `json:"process_check,omitempty"`
	// LastRun is the last run that released the lock: its start, end and
	// exit code.
	LastRun *state.RunRecord `json:"last_run,omitempty"`
}

// State is what the lock is, as aso status and aso serve show it: "free"
// (released: the holder fields are the last holder's), "held", "held,
// stopped" (its holder is stopped, not dead: it is not taken over while
// the lock is valid), "dead" (its holder ran on this host and is gone: the
// next run takes it over) or "expired" (its holder stopped renewing it).
func (l *LockView) State() string {
	switch {
	case l.Held && l.Process == "dead":
		return "dead"
	case l.Held && l.Process == "stopped":
		return "held, stopped"
	case l.Held:
		return "held"
	case !l.Expires.IsZero():
		return "expired"
	}
	return "free"
}

// Locks reads the run locks of user ("" every user) in one query.
func Locks(ctx context.Context, st state.Store, user string, now time.Time) ([]LockView, error) {
	ls, err := st.Locks(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("status: run locks: %w", err)
	}
	out := make([]LockView, len(ls))
	for i, l := range ls {
		v := LockView{User: l.User, Holder: l.Holder, Since: l.Since, Expires: l.Expire, LastRun: l.LastRun, Held: l.Expire.After(now)}
		if h, ok := holder.Parse(l.Holder); ok {
			v.Host, v.PID = h.Host, h.PID
		}
		if v.Held {
			c := holder.Of(l.Holder)
			v.Process, v.Check = c.State.String(), c.Why
		}
		out[i] = v
	}
	return out, nil
}
