package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/internal/outputs"
	"github.com/asyncstageout/aso/state"
)

// PurgeOptions are the flags of `aso purge`.
type PurgeOptions struct {
	OlderThan time.Duration
	Archive   string
	AllUsers  bool
	JSON      bool
	Act       ActOptions
}

// AddFlags registers the flags of `aso purge`.
func (o *PurgeOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.OlderThan, "older-than", 0, "remove terminal transfers last updated longer ago than this (required, e.g. 720h)")
	f.StringVar(&o.Archive, "archive", "", "append the removed transfers to this JSON-lines file first (synced before anything is removed); a path that cannot be written or names the store, the sites or configuration file is refused")
	f.BoolVar(&o.AllUsers, "all-users", false, "purge the transfers of every user, not only --user's")
	f.BoolVar(&o.JSON, "json", false, `print {"user", "purged", "before", "archive"} as one JSON line (with --dry-run: one line per transfer)`)
	o.Act.AddFlags(f, fmt.Sprintf("a purge of more than %d transfers", admin.AskAbove))
}

func newPurgeCommand(g *Globals) *cobra.Command {
	o := &PurgeOptions{}
	cmd := &cobra.Command{
		Use:   "purge --older-than DURATION [--archive FILE.jsonl]",
		Short: "Remove ended transfers (done, failed, killed) older than a duration, archiving them first if asked",
		Long: "purge removes the terminal transfers (done, failed, killed) of --user (--all-users:\n" +
			"everyone) whose last update is older than --older-than, in bulk. With --archive they\n" +
			"are first appended to FILE as JSON lines (one transfer, with its history, a line) and\n" +
			"the file is synced to disk before any of them is removed; each archived transfer's history\n" +
			"ends with who purged it (login@host) and when. Transfers waiting or running are never\n" +
			"touched. --dry-run prints what would be removed and changes nothing. On a terminal, a\n" +
			"purge of more than 100 transfers asks first (--yes does not). Of one user it reads that\n" +
			"user's finished transfers only (on CouchDB, a view keyed by the user); --all-users reads\n" +
			"every document of the store.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPurge(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runPurge(ctx context.Context, o *PurgeOptions, g *Globals) error {
	if o.OlderThan == 0 {
		return usagef("--older-than DURATION is required (e.g. 720h)")
	}
	user, err := g.usersOf(o.AllUsers)
	if err != nil {
		return err
	}
	if err := g.checkOutputs([]outputs.Output{{Flag: "--archive", Path: o.Archive}}); err != nil {
		return err
	}
	a, t := admin.Purge(state.PurgeOptions{User: user, Before: time.Now().Add(-o.OlderThan)}, o.Archive)
	a.JSON = o.JSON
	err = o.Act.run(ctx, g, a, t, func(context.Context) error { return nil })
	if !o.Act.DryRun && !errors.Is(err, admin.ErrNotConfirmed) {
		g.Log.WithFields(logrus.Fields{FieldUser: user, "purged": a.Tally.Done, "archive": o.Archive}).Info("purge finished")
	}
	return err
}
