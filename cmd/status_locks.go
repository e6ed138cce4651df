package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// LockView is a user's run lock as `aso status` shows it.
type LockView struct {
	User string `json:"user"`
	// Holder is the agent that took the lock last (hostname:pid:random),
	// with its host and process ID; Held says whether it still holds it
	// (not released, not expired).
	Holder  string     `json:"holder,omitempty"`
	Host    string     `json:"host,omitempty"`
	PID     int        `json:"pid,omitempty"`
	Held    bool       `json:"held"`
	Since   state.Time `json:"since,omitzero"`
	Expires state.Time `json:"expires,omitzero"`
	// LastRun is the last run that released the lock: its start, end and
	// exit code.
	LastRun *state.RunRecord `json:"last_run,omitempty"`
}

// lockViews reads the run locks of user ("" every user).
func lockViews(ctx context.Context, st state.Store, user string, now time.Time) ([]LockView, error) {
	ls, err := st.Locks(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("status: run locks: %w", err)
	}
	out := make([]LockView, len(ls))
	for i, l := range ls {
		v := LockView{User: l.User, Holder: l.Holder, Since: l.Since, Expires: l.Expire, LastRun: l.LastRun, Held: l.Expire.After(now)}
		v.Host, v.PID, _ = state.HolderHostPID(l.Holder)
		out[i] = v
	}
	return out, nil
}

// printLocks prints the run locks table of `aso status`.
func printLocks(w io.Writer, locks []LockView) {
	titledTable(w, "Run locks", len(locks), "USER\tLOCK\tHOST\tPID\tSINCE\tEXPIRES\tLAST RUN STARTED\tENDED\tEXIT", func(tw io.Writer) {
		for _, l := range locks {
			fmt.Fprintln(tw, lockRow(&l))
		}
	})
}

// lockRow is the row of l in the run locks table.
func lockRow(l *LockView) string {
	lock := "free"
	switch {
	case l.Held:
		lock = "held"
	case !l.Expires.IsZero():
		lock = "expired" // its holder stopped renewing it: not running
	}
	host, pid, since, exp := "-", "-", "-", "-"
	if lock != "free" {
		host, since, exp = orDash(l.Host), orDash(l.Since.String()), l.Expires.String()
		if l.PID > 0 {
			pid = fmt.Sprint(l.PID)
		}
	}
	started, ended, code := "-", "-", "-"
	if r := l.LastRun; r != nil {
		started, ended, code = orDash(r.Started.String()), orDash(r.Ended.String()), fmt.Sprint(r.ExitCode)
		if r.ExitCode < 0 {
			code = "unknown: " + r.Error
		}
		if r.By != "" {
			code += " (by " + r.By + ")"
		}
	}
	return strings.Join([]string{l.User, lock, host, pid, since, exp, started, ended, code}, "\t")
}
