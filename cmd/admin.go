package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// adminBatch is how many IDs or requests the operator commands hand to one
// store call.
const adminBatch = 1000

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

// idCommand is what kill and retry share: the transfer IDs (or unique
// prefixes) given on the command line, or the transfers the filters or the
// all-flag select, handled a batch or a page of IDs at a time.
type idCommand struct {
	allFlag string        // the flag that selects all: "all", "failed"
	all     bool          // whether it was given
	states  []state.State // the states the all-flag selects, and the filters by default
	sel     *SelectOptions
	json    bool
	// batch acts on one batch of IDs; report prints each outcome.
	batch func(ctx context.Context, st state.Store, ids []string, report *idReport) error
}

// run acts on ids (or on the selection) and returns the user acted for
// ("" for any) and the tally. Given IDs are acted on only when they
// belong to --user, if given; a selection is of --user, else of the login
// name, unless --all-users.
func (c idCommand) run(ctx context.Context, g *Globals, ids []string) (string, idTally, error) {
	rep := &idReport{g: g}
	if c.json {
		rep.out = newJSONLines(g.Stdout)
	}
	selecting := c.all || c.sel.any()
	switch {
	case selecting && len(ids) > 0:
		return "", rep.tally, usagef("give transfer IDs, or --%s or filters, not both", c.allFlag)
	case !selecting && len(ids) == 0:
		return "", rep.tally, usagef("give one or more transfer IDs, or --%s, or filters (see --help)", c.allFlag)
	case len(ids) > 0 && c.sel.AllUsers && g.userFlagGiven():
		return "", rep.tally, usagef("give --user or --all-users, not both")
	}
	var f state.Filter
	user := g.User
	if selecting {
		var err error
		if f, err = c.sel.filter(g, time.Now()); err != nil {
			return "", rep.tally, err
		}
		if len(f.States) == 0 {
			f.States = c.states
		}
		user = f.User
	}
	err := withStore(ctx, g, user, func(st state.Store) error {
		if selecting {
			return eachPage(ctx, st, f, 0, func(ts []state.Transfer) error { return c.batch(ctx, st, idsOf(ts), rep) })
		}
		full, err := resolveIDs(ctx, st, user, ids)
		if err != nil {
			return err
		}
		return inBatches(ctx, full, func(batch []string) error {
			mine, err := rep.othersOf(ctx, st, user, batch)
			if err != nil {
				return err
			}
			return c.batch(ctx, st, mine, rep)
		})
	})
	return user, rep.tally, err
}

// idReport prints the outcome of each ID, as text or JSON lines, and
// counts them.
type idReport struct {
	g     *Globals
	out   jsonLines // zero: text
	tally idTally
}

// IDOutcome is one line of `aso kill --json` and `aso retry --json`.
type IDOutcome struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	State   string `json:"state,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// text replaces the outcome and detail in the text output.
	text string
}

// line prints one outcome and counts it.
func (r *idReport) line(o IDOutcome, counter *int) {
	*counter++
	if r.out.enc != nil {
		_ = r.out.write(o)
		return
	}
	text := o.text
	if text == "" {
		text = strings.ReplaceAll(o.Outcome, "_", " ")
	}
	if o.Detail != "" && o.text == "" {
		text += " (" + o.Detail + ")"
	}
	fmt.Fprintf(r.g.Stdout, "%s: %s\n", o.ID, text)
}

// othersOf reports the IDs of ids that belong to another user than user
// (if set) as not found, and returns the others.
func (r *idReport) othersOf(ctx context.Context, st state.Store, user string, ids []string) ([]string, error) {
	if user == "" {
		return ids, nil
	}
	ts, err := st.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("read transfers: %w", err)
	}
	owner := make(map[string]string, len(ts))
	for _, t := range ts {
		owner[t.ID] = t.User
	}
	mine := ids[:0:0]
	for _, id := range ids {
		if u, ok := owner[id]; ok && u != user {
			r.line(IDOutcome{ID: id, Outcome: "not_found", Detail: fmt.Sprintf("it belongs to %s, not %s: give --user %s or --all-users", u, user, u)}, &r.tally.notFound)
			continue
		}
		mine = append(mine, id)
	}
	return mine, nil
}

// results prints one outcome per result of a bulk call on ids.
func (r *idReport) results(ids []string, res []state.Result, outcome func(id string, err error) (IDOutcome, *int)) {
	for i, x := range res {
		id := x.ID
		if id == "" && i < len(ids) {
			id = ids[i]
		}
		o, counter := outcome(id, x.Err)
		o.ID = id
		r.line(o, counter)
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
