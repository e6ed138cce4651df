package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// KillOptions are the flags and arguments of `aso kill`.
type KillOptions struct {
	All bool
	IDs []string
}

// AddFlags registers the flags of `aso kill`.
func (o *KillOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.All, "all", false, "kill every transfer of the user that has not ended (new, acquired, submitted)")
}

func newKillCommand(g *Globals) *cobra.Command {
	o := &KillOptions{}
	cmd := &cobra.Command{
		Use:   "kill ID...|--all",
		Short: "Kill transfers: new ones at once, running ones through the agent, which cancels them in FTS",
		Long: "kill asks for transfers to be killed. A transfer still waiting (new) is killed at once;\n" +
			"one that an agent holds (acquired or submitted) is marked kill_requested, and the agent\n" +
			"cancels it in FTS and marks it killed. --all kills every unfinished transfer of --user.\n" +
			"Exits 1 if an ID is unknown.",
		RunE: func(cmd *cobra.Command, args []string) error { o.IDs = args; return runKill(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runKill(ctx context.Context, o *KillOptions, g *Globals) error {
	c := idCommand{allFlag: "all", all: o.All, batch: killBatch,
		states: []state.State{state.StateNew, state.StateAcquired, state.StateSubmitted}}
	user, tally, err := c.run(ctx, g, o.IDs)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "%d killed, %d kill requested, %d already terminal, %d not found, %d failed\n",
		tally.done, tally.pending, tally.skipped, tally.notFound, tally.failed)
	g.Log.WithFields(logrus.Fields{FieldUser: user, "killed": tally.done, "kill_requested": tally.pending, "not_found": tally.notFound}).Info("kill finished")
	return tally.err("killed")
}

// killBatch requests the kill of ids and prints one line per ID. It re-reads
// the transfers afterwards to tell "killed" (a new transfer, ended at once)
// from "kill requested" (the agent will cancel it).
func killBatch(ctx context.Context, g *Globals, st state.Store, ids []string, tally *idTally) error {
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
	reportResults(g, ids, res, func(id string, err error) (string, *int) {
		switch {
		case err == nil && states[id] == state.StateKilled:
			return "killed", &tally.done
		case err == nil:
			return fmt.Sprintf("kill requested (%s; the agent cancels it)", states[id]), &tally.pending
		case isNotFound(err):
			return "not found", &tally.notFound
		case errors.Is(err, state.ErrTerminal):
			return fmt.Sprintf("already terminal (%s)", states[id]), &tally.skipped
		}
		return fmt.Sprintf("error: %v", err), &tally.failed
	})
	return nil
}
