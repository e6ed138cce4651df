package cmd

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/state"
)

// ActOptions are the flags kill, retry and purge share: a dry run, and
// the question asked on a terminal before a large action.
type ActOptions struct {
	DryRun bool
	Yes    bool
}

// AddFlags registers --dry-run and --yes; large says which actions ask
// first.
func (o *ActOptions) AddFlags(f *pflag.FlagSet, large string) {
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would change (counts by user and state; with --json, one line per transfer) and change nothing")
	f.BoolVar(&o.Yes, "yes", false, "do not ask first: on a terminal, "+large+" asks for confirmation (a command without a terminal never asks)")
}

// run runs a on t, in a store opened for t.User, after prepare: a dry run
// read-only, its plan logged; else asking first on a terminal unless
// --yes, and showing the progress.
func (o ActOptions) run(ctx context.Context, g *Globals, a *admin.Action, t *admin.Targets, prepare func(context.Context) error) error {
	a.Out = g.Stdout
	if !o.Yes && g.stdinTerminal() {
		a.Confirm = func(q string) error { return ask(g, q) }
	}
	a.Show = func(total int) (func(int, string), func()) {
		v := newOpView(g, a.Verb, int64(total), transfers, g.Progress)
		return func(n int, detail string) { v.update(int64(n), detail) }, v.close
	}
	if o.DryRun {
		ctx = readOnly(ctx)
	}
	return withStore(ctx, g, t.User, func(st state.Store) error {
		t.Store = st
		if err := prepare(ctx); err != nil {
			return err
		}
		p, err := a.Run(ctx, t, o.DryRun)
		if p != nil && err == nil {
			g.Log.WithFields(logrus.Fields{FieldUser: t.User, "action": p.Verb, "would_change": p.Total, "users": len(p.ByUser), "by_user": p.ByUser}).
				Info("dry run: nothing was changed")
		}
		return err
	})
}

// ask asks question on standard error and reads the answer from standard
// input: admin.ErrNotConfirmed unless it is y or yes.
func ask(g *Globals, question string) error {
	fmt.Fprint(g.Stderr, question)
	answer, err := bufio.NewReader(g.stdin()).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(g.Stderr)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return admin.ErrNotConfirmed
}

// thousands writes n with a comma every three digits: 2,345.
func thousands(n int) string { return admin.Thousands(n) }

// plural says n things: "1 user", "2,345 transfers".
func plural(n int, thing string) string { return admin.Plural(n, thing) }
