package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// KillOptions are the flags and arguments of `aso kill`.
type KillOptions struct {
	All    bool
	JSON   bool
	Act    ActOptions
	Select SelectOptions
	IDs    []string
}

// AddFlags registers the flags of `aso kill`.
func (o *KillOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.All, "all", false, "kill every transfer of the user that has not ended (new, acquired, submitted)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON lines: one {id, outcome, state, detail} per transfer")
	o.Act.AddFlags(cmd.Flags(), fmt.Sprintf("a kill of more than %d transfers, or of --all,", askAbove))
	o.Select.AddFlags(cmd.Flags())
}

// activeStates are the states a kill selects unless --in-state is given.
var activeStates = []state.State{state.StateNew, state.StateAcquired, state.StateSubmitted}

func newKillCommand(g *Globals) *cobra.Command {
	o := &KillOptions{}
	cmd := &cobra.Command{
		Use:   "kill ID...|--all|filters",
		Short: "Kill transfers: new ones at once, running ones through the agent, which cancels them in FTS",
		Long: "kill asks for transfers to be killed. A transfer still waiting (new) is killed at once;\n" +
			"one that an agent holds (acquired or submitted) is marked kill_requested, and the agent\n" +
			"cancels it in FTS and marks it killed. An ID may be shortened to a unique prefix of at\n" +
			"least 8 digits. With --user, only that user's transfers are killed.\n" +
			"--all kills every unfinished transfer of --user; the filters of `aso list` (--in-state,\n" +
			"--link, --lfn, --fts-job, --since, --all-users) select the transfers to kill instead,\n" +
			"the unfinished ones unless --in-state is given. The history of each transfer records who\n" +
			"asked (login@host) and when. --dry-run prints what would change and changes nothing. On a\n" +
			"terminal, a kill of --all or of more than 100 transfers asks first (--yes does not).\n" +
			"Exits 1 if an ID is unknown.",
		RunE: func(cmd *cobra.Command, args []string) error { o.IDs = args; return runKill(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runKill(ctx context.Context, o *KillOptions, g *Globals) error {
	c := idCommand{verb: "kill", allFlag: "all", all: o.All, batch: killBatch, states: activeStates, sel: &o.Select, json: o.JSON,
		act: o.Act, would: killWould, effect: "new: killed at once; acquired, submitted: kill requested, the agent cancels them"}
	user, tally, err := c.run(ctx, g, o.IDs)
	if err != nil || o.Act.DryRun {
		return cmp.Or(err, tally.err("killed"))
	}
	if !o.JSON {
		fmt.Fprintf(g.Stdout, "%d killed, %d kill requested, %d already terminal, %d not found, %d failed\n",
			tally.done, tally.pending, tally.skipped, tally.notFound, tally.failed)
	}
	g.Log.WithFields(logrus.Fields{FieldUser: user, "killed": tally.done, "kill_requested": tally.pending,
		"already_terminal": tally.skipped, "not_found": tally.notFound, "failed": tally.failed}).Info("kill finished")
	return tally.err("killed")
}

// killWould says what a kill would do to t.
func killWould(t *state.Transfer) (IDOutcome, bool) {
	switch {
	case t.State.Terminal():
		return IDOutcome{Outcome: "already_terminal", Detail: string(t.State)}, false
	case t.State == state.StateNew:
		return IDOutcome{Outcome: "would_kill"}, true
	}
	return IDOutcome{Outcome: "would_request_kill", Detail: "the agent would cancel it"}, true
}

// killBatch requests the kill of ids and reports each. It re-reads the
// transfers afterwards to tell "killed" (a new transfer, ended at once)
// from "kill requested" (the agent will cancel it).
func killBatch(ctx context.Context, st state.Store, ids []string, rep *idReport) error {
	if len(ids) == 0 {
		return nil
	}
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
	tally := &rep.tally
	rep.results(ids, res, func(id string, err error) (IDOutcome, *int) {
		st := string(states[id])
		switch {
		case err == nil && states[id] == state.StateKilled:
			return IDOutcome{Outcome: "killed", State: st}, &tally.done
		case err == nil:
			return IDOutcome{Outcome: "kill_requested", State: st, Detail: st + "; the agent cancels it"}, &tally.pending
		case isNotFound(err):
			return IDOutcome{Outcome: "not_found"}, &tally.notFound
		case errors.Is(err, state.ErrTerminal):
			return IDOutcome{Outcome: "already_terminal", State: st, Detail: st}, &tally.skipped
		}
		return IDOutcome{Outcome: "error", State: st, Detail: err.Error(), text: "error: " + err.Error()}, &tally.failed
	})
	return nil
}
