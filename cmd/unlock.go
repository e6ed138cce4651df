package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// UnlockOptions are the flags and argument of `aso unlock`.
type UnlockOptions struct {
	User  string
	Force bool
	JSON  bool
}

// AddFlags registers the flags of `aso unlock`.
func (o *UnlockOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.Force, "force", false, "release the lock even while it is live (its agent, if running, stops at its next renewal)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, `print {"user", "released", "holder", "reason"} as one JSON line`)
}

func newUnlockCommand(g *Globals) *cobra.Command {
	o := &UnlockOptions{}
	cmd := &cobra.Command{
		Use:   "unlock USER",
		Short: "Release the run lock of a user whose agent is known dead",
		Long: "unlock releases the run lock of USER when its holder is known dead: the lock expired\n" +
			"(its agent stopped renewing it), or the holder ran on this host and its process is\n" +
			"gone. A live lock of a holder that may be running is refused (exit 3) unless --force;\n" +
			"a forced unlock makes a running agent stop at its next renewal, before it writes again.\n" +
			"The release is recorded as the user's last run, with exit code unknown and who\n" +
			"released it (login@host), which aso status shows.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { o.User = args[0]; return runUnlock(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runUnlock(ctx context.Context, o *UnlockOptions, g *Globals) error {
	if err := state.CheckUser(o.User); err != nil {
		return usagef("unlock: %v", err)
	}
	return withStore(ctx, g, o.User, func(st state.Store) error {
		ls, err := st.Locks(ctx, o.User)
		if err != nil {
			return fmt.Errorf("unlock %s: %w", o.User, err)
		}
		if len(ls) == 0 || ls[0].Expire.IsZero() {
			if o.JSON {
				return newJSONLines(g.Stdout).write(unlockJSON{User: o.User, Reason: "not held"})
			}
			fmt.Fprintf(g.Stdout, "run lock of %s is not held: nothing to release\n", o.User)
			return nil
		}
		l := ls[0]
		why, dead := holderDead(&l, time.Now())
		if !dead {
			if !o.Force {
				return fmt.Errorf("unlock %s: %s; give --force to release it anyway: %w", o.User, why, state.ErrLocked)
			}
			why = "forced: " + why
		}
		// the store records who released it: the operator (see withStore)
		note := fmt.Sprintf("lock released by aso unlock (%s)", why)
		if err := st.Unlock(ctx, o.User, l.Holder, note); err != nil {
			if errors.Is(err, state.ErrLockLost) {
				return fmt.Errorf("unlock %s: the lock changed meanwhile (%v); run aso status and try again", o.User, err)
			}
			return fmt.Errorf("unlock %s: %w", o.User, err)
		}
		g.Log.WithFields(logrus.Fields{FieldUser: o.User, "holder": l.Holder, "reason": why}).Warn("run lock released by unlock")
		if o.JSON {
			return newJSONLines(g.Stdout).write(unlockJSON{User: o.User, Released: true, Holder: l.Holder, Reason: why})
		}
		fmt.Fprintf(g.Stdout, "released the run lock of %s held by %s (%s)\n", o.User, l.Holder, why)
		return nil
	})
}

// unlockJSON is what aso unlock --json prints.
type unlockJSON struct {
	User     string `json:"user"`
	Released bool   `json:"released"`
	Holder   string `json:"holder,omitempty"`
	Reason   string `json:"reason"`
}

// holderDead tells whether the holder of the held lock l is known dead at
// now, and why (or why it may be alive): its lock expired, or it ran on
// this host and its process is gone (see holder.Of).
func holderDead(l *state.LockDoc, now time.Time) (string, bool) {
	if !l.Expire.After(now) {
		return fmt.Sprintf("held by %s, expired at %s: its agent stopped renewing it", l.Holder, l.Expire), true
	}
	why, takeOver := holder.Judge(l.Holder)
	return fmt.Sprintf("held by %s until %s, but %s", l.Holder, l.Expire, why), takeOver
}
