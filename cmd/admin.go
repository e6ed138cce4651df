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
	verb    string        // "kill", "retry": the question and the dry run name it
	allFlag string        // the flag that selects all: "all", "failed"
	all     bool          // whether it was given
	states  []state.State // the states the all-flag selects, and the filters by default
	sel     *SelectOptions
	json    bool
	act     ActOptions
	// batch acts on one batch of IDs; report prints each outcome.
	batch func(ctx context.Context, st state.Store, ids []string, report *idReport) error
	// would says what batch would do to t, and whether that changes it:
	// for a dry run and the question.
	would func(t *state.Transfer) (IDOutcome, bool)
	// effect says what the changes are, for the dry run's summary.
	effect string
}

// run acts on ids (or on the selection) and returns the user acted for
// ("" for any) and the tally. Given IDs are acted on only when they
// belong to --user, if given; a selection is of --user, else of the login
// name, unless --all-users. A dry run reads and changes nothing; on a
// terminal, a large action or the all-flag asks first (confirm).
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
	if c.act.DryRun {
		ctx = readOnly(ctx)
	}
	err := withStore(ctx, g, user, func(st state.Store) error {
		t := idTargets{st: st, user: user, filter: f, selecting: selecting}
		if !selecting {
			var err error
			if t.ids, err = resolveIDs(ctx, st, user, ids); err != nil {
				return err
			}
		}
		if c.act.DryRun {
			p := newPlan(c.verb)
			if err := t.each(ctx, rep, c.dryBatch(p)); err != nil {
				return err
			}
			if !c.json {
				p.print(g.Stdout, c.effect, rep.tally.rest(c.verb))
			}
			p.log(g, user)
			return nil
		}
		if err := c.confirm(ctx, g, &t); err != nil {
			return err
		}
		view := newOpView(g, c.verb, int64(len(t.ids)), transfers, g.Progress)
		defer view.close()
		return t.each(ctx, rep, func(ctx context.Context, st state.Store, ids []string, rep *idReport) error {
			err := c.batch(ctx, st, ids, rep)
			view.update(int64(rep.tally.total()), rep.tally.detail(c.verb))
			return err
		})
	})
	return user, rep.tally, err
}

// idTargets are the transfers an idCommand acts on: the IDs given, or the
// selection of filter.
type idTargets struct {
	st        state.Store
	user      string // --user, if given: the owner of the given IDs
	filter    state.Filter
	selecting bool
	ids       []string // full IDs, when not selecting
}

// each calls batch on every page of the selection, or every batch of the
// given IDs (those of another user than t.user reported not found).
func (t *idTargets) each(ctx context.Context, rep *idReport, batch func(context.Context, state.Store, []string, *idReport) error) error {
	if t.selecting {
		return eachPage(ctx, t.st, t.filter, 0, func(ts []state.Transfer) error { return batch(ctx, t.st, idsOf(ts), rep) })
	}
	return inBatches(ctx, t.ids, func(ids []string) error {
		mine, err := rep.othersOf(ctx, t.st, t.user, ids)
		if err != nil {
			return err
		}
		return batch(ctx, t.st, mine, rep)
	})
}

// transfers calls fn on the stored transfers of every page or batch, one
// store call each, without reporting anything.
func (t *idTargets) transfers(ctx context.Context, fn func([]state.Transfer)) error {
	if t.selecting {
		return eachPage(ctx, t.st, t.filter, 0, func(ts []state.Transfer) error { fn(ts); return nil })
	}
	return inBatches(ctx, t.ids, func(ids []string) error {
		ts, err := t.st.List(ctx, state.Filter{IDs: ids, User: t.user})
		if err != nil {
			return fmt.Errorf("read transfers: %w", err)
		}
		fn(ts)
		return nil
	})
}

// confirm asks on a terminal, unless --yes, before the all-flag or an
// action that would change more than askAbove transfers: errNotConfirmed
// unless the answer is yes. Without a terminal it never asks.
func (c idCommand) confirm(ctx context.Context, g *Globals, t *idTargets) error {
	if c.act.Yes || !g.stdinTerminal() || (!t.selecting && len(t.ids) <= askAbove) {
		return nil
	}
	p := newPlan(c.verb)
	err := t.transfers(ctx, func(ts []state.Transfer) {
		for i := range ts {
			if _, changes := c.would(&ts[i]); changes {
				p.add(&ts[i])
			}
		}
	})
	if err != nil || p.total == 0 || (!c.all && p.total <= askAbove) {
		return err
	}
	return ask(g, p.question())
}

// dryBatch returns the batch function of a dry run: it reads the
// transfers of ids, counts in p those the command would change, and
// reports each as what would be done to it.
func (c idCommand) dryBatch(p *plan) func(context.Context, state.Store, []string, *idReport) error {
	return func(ctx context.Context, st state.Store, ids []string, rep *idReport) error {
		if len(ids) == 0 {
			return nil
		}
		ts, err := st.List(ctx, state.Filter{IDs: ids})
		if err != nil {
			return fmt.Errorf("read transfers: %w", err)
		}
		byID := make(map[string]*state.Transfer, len(ts))
		for i := range ts {
			byID[ts[i].ID] = &ts[i]
		}
		for _, id := range ids {
			t, ok := byID[id]
			if !ok {
				rep.line(IDOutcome{ID: id, Outcome: "not_found", DryRun: true}, &rep.tally.notFound)
				continue
			}
			o, changes := c.would(t)
			o.ID, o.User, o.State, o.DryRun = id, t.User, string(t.State), true
			counter := &rep.tally.skipped
			if changes {
				p.add(t)
				counter = &rep.tally.done
			}
			rep.quietLine(o, counter)
		}
		return nil
	}
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
	// User and DryRun are set by a dry run, whose outcomes say what would
	// be done.
	User   string `json:"user,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
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

// quietLine counts o, and prints it only as JSON: the text output of a
// dry run is its table.
func (r *idReport) quietLine(o IDOutcome, counter *int) {
	if r.out.enc == nil {
		*counter++
		return
	}
	r.line(o, counter)
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
			r.line(IDOutcome{ID: id, Outcome: "not_found", Detail: ownerMismatch(u, user)}, &r.tally.notFound)
			continue
		}
		mine = append(mine, id)
	}
	return mine, nil
}

// ownerMismatch says that a transfer named for user belongs to owner, and
// how to name it: what status, kill and retry say alike.
func ownerMismatch(owner, user string) string {
	return fmt.Sprintf("it belongs to %s, not %s: give --user %s or --all-users", owner, user, owner)
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

// total counts the transfers acted on so far.
func (t idTally) total() int { return t.done + t.pending + t.skipped + t.notFound + t.failed }

// detail says what was done so far, for the progress display.
func (t idTally) detail(verb string) string {
	if verb == "retry" {
		return fmt.Sprintf("%s queued again, %s not terminal, %s not found, %s failed", thousands(t.done), thousands(t.skipped), thousands(t.notFound), thousands(t.failed))
	}
	return fmt.Sprintf("%s killed, %s kill requested, %s already terminal, %s not found, %s failed",
		thousands(t.done), thousands(t.pending), thousands(t.skipped), thousands(t.notFound), thousands(t.failed))
}

// rest says, for a dry run's summary, what was found that would not
// change.
func (t idTally) rest(verb string) string {
	skipped := "already terminal"
	if verb == "retry" {
		skipped = "not terminal"
	}
	return fmt.Sprintf("%d %s, %d not found", t.skipped, skipped, t.notFound)
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
