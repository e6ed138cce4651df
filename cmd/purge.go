package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

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
	o.Act.AddFlags(f, fmt.Sprintf("a purge of more than %d transfers", askAbove))
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
	po := state.PurgeOptions{User: user, Before: time.Now().Add(-o.OlderThan)}
	if o.Act.DryRun {
		return withStore(readOnly(ctx), g, user, func(st state.Store) error { return dryPurge(ctx, g, st, o, po) })
	}
	return withStore(ctx, g, user, func(st state.Store) error {
		if !o.Act.Yes && g.stdinTerminal() {
			if err := confirmPurge(ctx, g, st, po); err != nil {
				return err
			}
		}
		if o.Archive != "" {
			a, err := openArchive(o.Archive)
			if err != nil {
				return err
			}
			defer a.f.Close()
			po.Archive = a
		}
		view := newOpView(g, "purge", 0, transfers, g.Progress)
		po.Progress = func(n int) { view.update(int64(n), "removed") }
		n, err := st.Purge(ctx, po)
		view.close()
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

// purgeable calls fn on every page of the transfers po selects, one store
// call a page.
func purgeable(ctx context.Context, st state.Store, po state.PurgeOptions, fn func([]state.Transfer) error) error {
	f := state.Filter{User: po.User, States: []state.State{state.StateDone, state.StateFailed, state.StateKilled}}
	return eachPage(ctx, st, f, 0, func(ts []state.Transfer) error {
		return fn(slices.DeleteFunc(ts, func(t state.Transfer) bool { return !po.Purgeable(&t) }))
	})
}

// confirmPurge asks, on a terminal, before a purge of more than askAbove
// transfers.
func confirmPurge(ctx context.Context, g *Globals, st state.Store, po state.PurgeOptions) error {
	p := newPlan("purge")
	err := purgeable(ctx, st, po, func(ts []state.Transfer) error {
		for i := range ts {
			p.add(&ts[i])
		}
		return nil
	})
	if err != nil || p.total <= askAbove {
		return err
	}
	return ask(g, p.question())
}

// dryPurge prints what a purge would remove: counts by user and state, or
// with --json one line per transfer; it changes nothing, and writes no
// archive.
func dryPurge(ctx context.Context, g *Globals, st state.Store, o *PurgeOptions, po state.PurgeOptions) error {
	p := newPlan("purge")
	out := newJSONLines(g.Stdout)
	err := purgeable(ctx, st, po, func(ts []state.Transfer) error {
		for i := range ts {
			p.add(&ts[i])
			if o.JSON {
				line := purgeDryJSON{ID: ts[i].ID, User: ts[i].User, State: ts[i].State, LastUpdate: ts[i].LastUpdate, Outcome: "would_purge", DryRun: true}
				if err := out.write(line); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !o.JSON {
		effect := "removed: ended and last updated before " + po.Before.UTC().Format(time.RFC3339)
		if o.Archive != "" {
			effect += ", archived first to " + o.Archive
		}
		p.print(g.Stdout, effect, "")
	}
	p.log(g, po.User)
	return nil
}

// purgeDryJSON is one line of aso purge --dry-run --json.
type purgeDryJSON struct {
	ID         string      `json:"id"`
	User       string      `json:"user"`
	State      state.State `json:"state"`
	LastUpdate state.Time  `json:"last_update"`
	Outcome    string      `json:"outcome"`
	DryRun     bool        `json:"dry_run"`
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
