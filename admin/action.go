package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// Action is what an operator command does to its targets (kill, retry,
// purge): a dry run, or the question on a large action and then the
// action, a batch at a time, each transfer's outcome a line on Out.
type Action struct {
	Verb   string // kill, retry, purge: the question and the dry run name it
	Out    io.Writer
	JSON   bool
	All    bool   // the all-flag (--all, --failed) was given: a question even before a small action
	Effect string // what the changes are, for the dry run's summary
	// States are what the selection takes unless its filter names states.
	States []state.State
	// Confirm asks before a large action: an error (ErrNotConfirmed)
	// unless the answer is yes. nil: never asks.
	Confirm func(question string) error
	// Show, if set, starts the progress display of the action of total
	// transfers (0: unknown), and returns its update and its end.
	Show func(total int) (update func(done int, detail string), end func())
	// Warn hears of what could not be recorded beside the action.
	Warn func(id string, err error)
	// Tally counts the outcomes so far.
	Tally Tally

	would  func(t *state.Transfer) (Outcome, bool)
	batch  func(ctx context.Context, st state.Store, ids []string, ts []state.Transfer) error
	whole  func(ctx context.Context, st state.Store, update func(done int, detail string), end func()) error // in place of batch
	labels labels
	enc    *json.Encoder
}

// Tally counts the per-transfer outcomes of an action.
type Tally struct {
	Done     int // killed, retried, purged
	Pending  int // kill requested: the agent finishes it
	Skipped  int // nothing to do: already terminal (kill) or still active (retry)
	NotFound int
	Failed   int
}

// labels name the counts of an action in its text and its log.
type labels struct{ done, pending, skipped, past string }

// Outcome is one line of `aso kill --json`, `aso retry --json` and of a
// dry run's --json.
type Outcome struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	State   string `json:"state,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// User, LastUpdate (purge) and DryRun are set by a dry run, whose
	// outcomes say what would be done.
	User       string      `json:"user,omitempty"`
	LastUpdate *state.Time `json:"last_update,omitempty"`
	DryRun     bool        `json:"dry_run,omitempty"`
	// text replaces the outcome and detail in the text output.
	text string
}

// Run acts on t. A dry run reads, prints what would change and returns
// its plan, changing nothing. Otherwise it asks first (Confirm) and acts.
func (a *Action) Run(ctx context.Context, t *Targets, dryRun bool) (*Plan, error) {
	if t.Selecting && len(t.Filter.States) == 0 {
		t.Filter.States = a.States
	}
	other := func(id, owner string) {
		a.line(Outcome{ID: id, Outcome: "not_found", Detail: OwnerMismatch(owner, t.User)}, &a.Tally.NotFound)
	}
	if dryRun {
		p := NewPlan(a.Verb)
		err := t.each(ctx, other, func(ids []string, ts []state.Transfer) error { a.dry(p, ids, ts); return nil })
		if err == nil && !a.JSON {
			p.Print(a.Out, a.Effect, a.rest())
		}
		return p, err
	}
	if err := a.confirm(ctx, t); err != nil {
		return nil, err
	}
	update, end := func(int, string) {}, func() {}
	if a.Show != nil {
		update, end = a.Show(len(t.IDs))
	}
	defer end()
	if a.whole != nil {
		return nil, a.whole(ctx, t.Store, update, end)
	}
	return nil, t.each(ctx, other, func(ids []string, ts []state.Transfer) error {
		var err error
		if len(ids) > 0 {
			err = a.batch(ctx, t.Store, ids, ts)
		}
		c := a.Tally
		update(c.Done+c.Pending+c.Skipped+c.NotFound+c.Failed, a.counts(Thousands))
		return err
	})
}

// confirm asks, through Confirm, before the all-flag or an action that
// would change more than AskAbove transfers.
func (a *Action) confirm(ctx context.Context, t *Targets) error {
	if a.Confirm == nil || (!t.Selecting && len(t.IDs) <= AskAbove) {
		return nil
	}
	p := NewPlan(a.Verb)
	err := t.each(ctx, nil, func(_ []string, ts []state.Transfer) error {
		for i := range ts {
			if _, changes := a.would(&ts[i]); changes {
				p.Add(&ts[i])
			}
		}
		return nil
	})
	if err != nil || p.Total == 0 || (!a.All && p.Total <= AskAbove) {
		return err
	}
	return a.Confirm(p.Question())
}

// dry counts in p the transfers of ids the action would change, and
// reports each as what would be done to it.
func (a *Action) dry(p *Plan, ids []string, ts []state.Transfer) {
	byID := make(map[string]*state.Transfer, len(ts))
	for i := range ts {
		byID[ts[i].ID] = &ts[i]
	}
	for _, id := range ids {
		t, ok := byID[id]
		if !ok {
			a.line(Outcome{ID: id, Outcome: "not_found", DryRun: true}, &a.Tally.NotFound)
			continue
		}
		o, changes := a.would(t)
		o.ID, o.User, o.State, o.DryRun = id, t.User, string(t.State), true
		counter := &a.Tally.Skipped
		if changes {
			p.Add(t)
			counter = &a.Tally.Done
		}
		if !a.JSON { // the text output of a dry run is its table
			*counter++
			continue
		}
		a.line(o, counter)
	}
}

// line prints one outcome and counts it.
func (a *Action) line(o Outcome, counter *int) {
	*counter++
	if a.JSON {
		if a.enc == nil {
			a.enc = json.NewEncoder(a.Out)
			a.enc.SetEscapeHTML(false)
		}
		_ = a.enc.Encode(o)
		return
	}
	text := o.text
	if text == "" {
		text = strings.ReplaceAll(o.Outcome, "_", " ")
	}
	if o.Detail != "" && o.text == "" {
		text += " (" + o.Detail + ")"
	}
	fmt.Fprintf(a.Out, "%s: %s\n", o.ID, text)
}

// results prints one outcome per result of a bulk call on ids.
func (a *Action) results(ids []string, res []state.Result, outcome func(id string, err error) (Outcome, *int)) {
	for i, x := range res {
		id := x.ID
		if id == "" && i < len(ids) {
			id = ids[i]
		}
		o, counter := outcome(id, x.Err)
		o.ID = id
		a.line(o, counter)
	}
}

// counts says what was done so far, each count written by n: the
// progress and the summary line.
func (a *Action) counts(n func(int) string) string {
	c, l := a.Tally, a.labels
	parts := []string{n(c.Done) + " " + l.done}
	if l.pending != "" {
		parts = append(parts, n(c.Pending)+" "+l.pending)
	}
	parts = append(parts, n(c.Skipped)+" "+l.skipped, n(c.NotFound)+" not found", n(c.Failed)+" failed")
	return strings.Join(parts, ", ")
}

// Summary is the last line of the action: "3 killed, 1 kill requested, ...".
func (a *Action) Summary() string { return a.counts(strconv.Itoa) }

// LogFields are the counts of the action, for its log line.
func (a *Action) LogFields() map[string]any {
	c, l := a.Tally, a.labels
	f := map[string]any{l.past: c.Done, strings.ReplaceAll(l.skipped, " ", "_"): c.Skipped, "not_found": c.NotFound, "failed": c.Failed}
	if l.pending != "" {
		f[strings.ReplaceAll(l.pending, " ", "_")] = c.Pending
	}
	return f
}

// rest says, for a dry run's summary, what was found that would not
// change.
func (a *Action) rest() string {
	if a.labels.skipped == "" {
		return ""
	}
	return fmt.Sprintf("%d %s, %d not found", a.Tally.Skipped, a.labels.skipped, a.Tally.NotFound)
}

// Err returns the error the command exits with: a transfer that was not
// found or could not be acted on makes it exit 1.
func (a *Action) Err() error {
	c, past := a.Tally, a.labels.past
	switch {
	case c.NotFound > 0 && c.Failed > 0:
		return fmt.Errorf("%d transfer(s) not found and %d could not be %s", c.NotFound, c.Failed, past)
	case c.NotFound > 0:
		return fmt.Errorf("%d transfer(s) not found", c.NotFound)
	case c.Failed > 0:
		return fmt.Errorf("%d transfer(s) could not be %s", c.Failed, past)
	}
	return nil
}
