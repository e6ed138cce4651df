package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/state"
)

// withStore opens the state store for an operator command acting for user
// (empty: no particular user), runs f, and closes the store. The writer
// named in history entries is login@host:cli, who asked and from where.
func withStore(ctx context.Context, g *Globals, user string, f func(state.Store) error) error {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	cfg := state.Config{Agent: state.Agent{User: user, Owner: fmt.Sprintf("%s@%s:cli", loginName(g), host)}}
	st, err := g.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	err = f(st)
	if cerr := st.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the state store: %w", cerr)
	}
	if errors.Is(err, admin.ErrUsage) {
		return usageError{err}
	}
	return err
}

// actOn runs a (kill, retry) on the transfers of the command line: the
// IDs given, acted on only when they belong to --user, if given; or the
// selection of sel or of the all-flag (allFlag names it), of --user, else
// of the login name, unless --all-users. Then it prints the summary and
// logs the counts.
func actOn(ctx context.Context, g *Globals, a *admin.Action, ids []string, allFlag string, sel *SelectOptions, act ActOptions) error {
	t := &admin.Targets{User: g.User, Selecting: a.All || sel.any()}
	switch {
	case t.Selecting && len(ids) > 0:
		return usagef("give transfer IDs, or --%s or filters, not both", allFlag)
	case !t.Selecting && len(ids) == 0:
		return usagef("give one or more transfer IDs, or --%s, or filters (see --help)", allFlag)
	case len(ids) > 0 && sel.AllUsers && g.userFlagGiven():
		return usagef("give --user or --all-users, not both")
	case t.Selecting:
		var err error
		if t.Filter, err = sel.filter(g, time.Now()); err != nil {
			return err
		}
		t.User = t.Filter.User
	}
	err := act.run(ctx, g, a, t, func(ctx context.Context) error {
		if t.Selecting {
			return nil
		}
		return t.Resolve(ctx, ids)
	})
	if err != nil || act.DryRun {
		return cmp.Or(err, a.Err())
	}
	if !a.JSON {
		fmt.Fprintln(g.Stdout, a.Summary())
	}
	g.Log.WithFields(a.LogFields()).WithField(FieldUser, t.User).Info(a.Verb + " finished")
	return a.Err()
}
