package cmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/asyncstageout/aso/state"
)

// depView is one dependency of a transfer as `aso status ID` shows it.
type depView struct {
	ID     string      `json:"id"`
	State  state.State `json:"state,omitempty"` // empty: no such transfer is stored
	Reason string      `json:"reason,omitempty"`
}

// transferView is a transfer with the states of its dependencies.
type transferView struct {
	*state.Transfer
	Dependencies []depView `json:"dependencies,omitempty"`
	// Submissions counts the times the transfer was submitted to FTS,
	// from its history (attempts counts its failed attempts);
	// SubmissionsAtLeast says that the history was cut, so that there may
	// have been more.
	Submissions        int  `json:"submissions"`
	SubmissionsAtLeast bool `json:"submissions_at_least,omitempty"`
}

func newTransferView(t *state.Transfer, deps []depView) transferView {
	n, atLeast := submissions(t)
	return transferView{Transfer: t, Dependencies: deps, Submissions: n, SubmissionsAtLeast: atLeast}
}

// dependencies reads the states of t's dependencies in one call.
func dependencies(ctx context.Context, st state.Store, t *state.Transfer) ([]depView, error) {
	if len(t.DependsOn) == 0 {
		return nil, nil
	}
	ts, err := st.List(ctx, state.Filter{IDs: t.DependsOn})
	if err != nil {
		return nil, fmt.Errorf("status %s: dependencies: %w", t.ID, err)
	}
	byID := make(map[string]*state.Transfer, len(ts))
	for i := range ts {
		byID[ts[i].ID] = &ts[i]
	}
	out := make([]depView, len(t.DependsOn))
	for i, id := range t.DependsOn {
		out[i].ID = id
		if d, ok := byID[id]; ok {
			out[i].State = d.State
			if d.State == state.StateFailed || d.State == state.StateKilled {
				out[i].Reason = d.Reason
			}
		}
	}
	return out, nil
}

// printDeps prints the dependencies table of `aso status ID`.
func printDeps(w io.Writer, deps []depView) {
	titledTable(w, "Dependencies", len(deps), "ID\tSTATE\tREASON", func(tw io.Writer) {
		for _, d := range deps {
			s := string(d.State)
			if s == "" {
				s = "unknown (not stored)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.ID, s, orDash(d.Reason))
		}
	})
}

// titledTable prints a blank line, "title: n", and a table of head and the
// rows that rows writes; nothing when n is 0.
func titledTable(w io.Writer, title string, n int, head string, rows func(tw io.Writer)) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d\n", title, n)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	rows(tw)
	tw.Flush()
}
