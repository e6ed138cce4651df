package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// PurgeOptions are the flags of `aso purge`.
type PurgeOptions struct {
	OlderThan time.Duration
	Archive   string
	AllUsers  bool
	JSON      bool
}

// AddFlags registers the flags of `aso purge`.
func (o *PurgeOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.OlderThan, "older-than", 0, "remove terminal transfers last updated longer ago than this (required, e.g. 720h)")
	f.StringVar(&o.Archive, "archive", "", "append the removed transfers to this JSON-lines file first (synced before anything is removed)")
	f.BoolVar(&o.AllUsers, "all-users", false, "purge the transfers of every user, not only --user's")
	f.BoolVar(&o.JSON, "json", false, `print {"user", "purged", "before", "archive"} as one JSON line`)
}

func newPurgeCommand(g *Globals) *cobra.Command {
	o := &PurgeOptions{}
	cmd := &cobra.Command{
		Use:   "purge --older-than DURATION [--archive FILE.jsonl]",
		Short: "Remove ended transfers (done, failed, killed) older than a duration, archiving them first if asked",
		Long: "purge removes the terminal transfers (done, failed, killed) of --user (--all-users:\n" +
			"everyone) whose last update is older than --older-than, in bulk. With --archive they\n" +
			"are first appended to FILE as JSON lines (one transfer, with its history, a line) and\n" +
			"the file is synced to disk before any of them is removed. Transfers waiting or\n" +
			"running are never touched.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPurge(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runPurge(ctx context.Context, o *PurgeOptions, g *Globals) error {
	if o.OlderThan <= 0 {
		return usagef("--older-than DURATION is required and must be positive (e.g. 720h)")
	}
	user, err := g.usersOf(o.AllUsers)
	if err != nil {
		return err
	}
	po := state.PurgeOptions{User: user, Before: time.Now().Add(-o.OlderThan)}
	if o.Archive != "" {
		a, err := openArchive(o.Archive)
		if err != nil {
			return err
		}
		defer a.f.Close()
		po.Archive = a
	}
	return withStore(ctx, g, user, func(st state.Store) error {
		n, err := st.Purge(ctx, po)
		if o.JSON {
			if werr := newJSONLines(g.Stdout).write(purgeJSON{User: user, Purged: n, Before: po.Before.UTC(), Archive: o.Archive}); werr != nil {
				return werr
			}
		} else {
			who := "user " + user
			if user == "" {
				who = "every user"
			}
			fmt.Fprintf(g.Stdout, "purged %d terminal transfers of %s last updated before %s\n", n, who, po.Before.UTC().Format(time.RFC3339))
			if o.Archive != "" && n > 0 {
				fmt.Fprintf(g.Stdout, "archived to %s\n", o.Archive)
			}
		}
		g.Log.WithFields(logrus.Fields{FieldUser: user, "purged": n, "archive": o.Archive}).Info("purge finished")
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		return nil
	})
}

// purgeJSON is what aso purge --json prints: user is "" for every user.
type purgeJSON struct {
	User    string    `json:"user"`
	Purged  int       `json:"purged"`
	Before  time.Time `json:"before"`
	Archive string    `json:"archive,omitempty"`
}

// archive appends transfers to a JSON-lines file (state.Archiver).
type archive struct {
	f   *os.File
	enc *json.Encoder
}

func openArchive(path string) (*archive, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if os.IsNotExist(statErr) { // a new file: make its name durable too
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return &archive{f: f, enc: json.NewEncoder(f)}, nil
}

func (a *archive) Write(ts []state.Transfer) error {
	for i := range ts {
		if err := a.enc.Encode(&ts[i]); err != nil {
			return fmt.Errorf("write %s: %w", a.f.Name(), err)
		}
	}
	return nil
}

func (a *archive) Sync() error {
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.f.Name(), err)
	}
	return nil
}
