package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/asyncstageout/aso/state"
)

// adminBatch is how many IDs or requests the operator commands hand to one
// store call.
const adminBatch = 1000

// withStore opens the state store for an operator command acting for user
// (empty: no particular user), runs f, and closes the store. The owner ID
// written into history entries is hostname:pid:cli.
func withStore(ctx context.Context, g *Globals, user string, f func(state.Store) error) error {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	cfg := state.Config{Agent: state.Agent{User: user, Owner: fmt.Sprintf("%s:%d:cli", host, os.Getpid())}}
	st, err := g.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	err = f(st)
	if cerr := st.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the state store: %w", cerr)
	}
	return err
}

// inBatches calls f on consecutive slices of ids of at most adminBatch
// elements, stopping at the first error or when ctx is done.
func inBatches(ctx context.Context, ids []string, f func([]string) error) error {
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(ids), adminBatch)
		if err := f(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// idsOf returns the IDs of ts.
func idsOf(ts []state.Transfer) []string {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	return ids
}

// idCommand is what kill and retry share: the transfer IDs given on the
// command line, or with the all-flag every transfer of the user in some
// states, handled adminBatch IDs at a time.
type idCommand struct {
	allFlag string        // the flag that selects all: "all", "failed"
	all     bool          // whether it was given
	states  []state.State // the states it selects
	// batch acts on one batch of IDs and prints a line per ID.
	batch func(ctx context.Context, g *Globals, st state.Store, ids []string, tally *idTally) error
}

// run acts on ids (or on the selection of the all-flag) and returns the
// user acted for and the tally.
func (c idCommand) run(ctx context.Context, g *Globals, ids []string) (string, idTally, error) {
	var tally idTally
	switch {
	case c.all && len(ids) > 0:
		return "", tally, usagef("give transfer IDs or --%s, not both", c.allFlag)
	case !c.all && len(ids) == 0:
		return "", tally, usagef("give one or more transfer IDs, or --%s", c.allFlag)
	}
	user := g.User
	if c.all {
		u, err := g.UserName()
		if err != nil {
			return "", tally, err
		}
		user = u
	}
	err := withStore(ctx, g, user, func(st state.Store) error {
		if c.all {
			ts, err := st.List(ctx, state.Filter{User: user, States: c.states})
			if err != nil {
				return fmt.Errorf("list the %v transfers of %s: %w", c.states, user, err)
			}
			ids = idsOf(ts)
		}
		return inBatches(ctx, ids, func(batch []string) error { return c.batch(ctx, g, st, batch, &tally) })
	})
	return user, tally, err
}

// reportResults prints one line per result of a bulk call on ids: what
// outcome says for it, counted in tally.
func reportResults(g *Globals, ids []string, res []state.Result, outcome func(id string, err error) (string, *int)) {
	for i, r := range res {
		id := r.ID
		if id == "" && i < len(ids) {
			id = ids[i]
		}
		line, counter := outcome(id, r.Err)
		*counter++
		fmt.Fprintf(g.Stdout, "%s: %s\n", id, line)
	}
}

// idTally counts the per-ID outcomes of kill and retry.
type idTally struct {
	done     int // killed, or retried
	pending  int // kill requested: the agent finishes it
	skipped  int // nothing to do: already terminal (kill) or still active (retry)
	notFound int
	failed   int
}

// err returns the error the command exits with: an ID that was not found
// or an item that failed makes it exit 1.
func (t idTally) err(verb string) error {
	switch {
	case t.notFound > 0 && t.failed > 0:
		return fmt.Errorf("%d transfer(s) not found and %d could not be %s", t.notFound, t.failed, verb)
	case t.notFound > 0:
		return fmt.Errorf("%d transfer(s) not found", t.notFound)
	case t.failed > 0:
		return fmt.Errorf("%d transfer(s) could not be %s", t.failed, verb)
	}
	return nil
}

// isNotFound reports whether a per-item error means the ID is unknown.
func isNotFound(err error) bool { return errors.Is(err, state.ErrNotFound) }
