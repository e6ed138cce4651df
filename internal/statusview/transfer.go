package statusview

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Dependency is one dependency of a transfer as `aso status ID` shows it.
type Dependency struct {
	ID     string      `json:"id"`
	State  state.State `json:"state,omitempty"` // empty: no such transfer is stored
	Reason string      `json:"reason,omitempty"`
}

// Transfer is a transfer with the states of its dependencies: what `aso
// status ID --json` prints.
type Transfer struct {
	*state.Transfer
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// Submissions counts the times the transfer was submitted to FTS,
	// from its history (attempts counts its failed attempts);
	// SubmissionsAtLeast says that the history was cut, so that there may
	// have been more.
	Submissions        int  `json:"submissions"`
	SubmissionsAtLeast bool `json:"submissions_at_least,omitempty"`
}

// NewTransfer returns the Transfer of t with its dependencies deps.
func NewTransfer(t *state.Transfer, deps []Dependency) Transfer {
	n, atLeast := Submissions(t)
	return Transfer{Transfer: t, Dependencies: deps, Submissions: n, SubmissionsAtLeast: atLeast}
}

// Submissions counts the times t was submitted to FTS, from its history
// (each move to submitted); atLeast is set when the history was cut
// (state.MaxHistory keeps the newest entries), so that there may have been
// more. A transfer's attempts field counts something else: its failed
// attempts, against --max-attempts, which aso retry resets.
func Submissions(t *state.Transfer) (n int, atLeast bool) {
	for _, h := range t.History {
		if h.To == state.StateSubmitted && h.From != state.StateSubmitted {
			n++
		}
	}
	return n, len(t.History) >= state.MaxHistory
}

// Dependencies reads the states of t's dependencies in one call.
func Dependencies(ctx context.Context, st state.Store, t *state.Transfer) ([]Dependency, error) {
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
	out := make([]Dependency, len(t.DependsOn))
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
