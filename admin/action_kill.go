package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Kill is `aso kill`: a new transfer is killed at once, one an agent
// holds is marked kill_requested, for the agent to cancel in FTS. Its
// selection takes the transfers that have not ended.
func Kill() *Action {
	a := &Action{Verb: "kill", Effect: "new: killed at once; acquired, submitted: kill requested, the agent cancels them",
		States: []state.State{state.StateNew, state.StateAcquired, state.StateSubmitted},
		labels: labels{done: "killed", pending: "kill requested", skipped: "already terminal", past: "killed"}}
	a.would, a.batch = killWould, a.kill
	return a
}

// killWould says what a kill would do to t.
func killWould(t *state.Transfer) (Outcome, bool) {
	switch {
	case t.State.Terminal():
		return Outcome{Outcome: "already_terminal", Detail: string(t.State)}, false
	case t.State == state.StateNew:
		return Outcome{Outcome: "would_kill"}, true
	}
	return Outcome{Outcome: "would_request_kill", Detail: "the agent would cancel it"}, true
}

// kill requests the kill of ids and reports each. It re-reads the
// transfers afterwards to tell "killed" (a new transfer, ended at once)
// from "kill requested" (the agent will cancel it).
func (a *Action) kill(ctx context.Context, st state.Store, ids []string, _ []state.Transfer) error {
	res, err := st.RequestKill(ctx, ids)
	if err != nil {
		return fmt.Errorf("request kill: %w", err)
	}
	after, err := st.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return fmt.Errorf("read back killed transfers: %w", err)
	}
	states := make(map[string]state.State, len(after))
	for _, t := range after {
		states[t.ID] = t.State
	}
	c := &a.Tally
	a.results(ids, res, func(id string, err error) (Outcome, *int) {
		st := string(states[id])
		switch {
		case err == nil && states[id] == state.StateKilled:
			return Outcome{Outcome: "killed", State: st}, &c.Done
		case err == nil:
			return Outcome{Outcome: "kill_requested", State: st, Detail: st + "; the agent cancels it"}, &c.Pending
		case errors.Is(err, state.ErrNotFound):
			return Outcome{Outcome: "not_found"}, &c.NotFound
		case errors.Is(err, state.ErrTerminal):
			return Outcome{Outcome: "already_terminal", State: st, Detail: st}, &c.Skipped
		}
		return Outcome{Outcome: "error", State: st, Detail: err.Error(), text: "error: " + err.Error()}, &c.Failed
	})
	return nil
}
