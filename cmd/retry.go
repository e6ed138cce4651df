package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// RetryOptions are the flags and arguments of `aso retry`.
type RetryOptions struct {
	Failed bool
	IDs    []string
}

// AddFlags registers the flags of `aso retry`.
func (o *RetryOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.Failed, "failed", false, "retry every failed transfer of the user (killed ones are left alone)")
}

func newRetryCommand(g *Globals) *cobra.Command {
	o := &RetryOptions{}
	cmd := &cobra.Command{
		Use:   "retry ID...|--failed",
		Short: "Queue ended transfers (failed, killed or done) again, with their attempts reset",
		Long: "retry returns terminal transfers to new with their attempts reset, so that the next agent\n" +
			"run submits them again. --failed retries every failed transfer of --user.\n" +
			"Exits 1 if an ID is unknown.",
		RunE: func(cmd *cobra.Command, args []string) error { o.IDs = args; return runRetry(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runRetry(ctx context.Context, o *RetryOptions, g *Globals) error {
	c := idCommand{allFlag: "failed", all: o.Failed, batch: retryBatch, states: []state.State{state.StateFailed}}
	user, tally, err := c.run(ctx, g, o.IDs)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "%d queued again, %d not terminal, %d not found, %d failed\n", tally.done, tally.skipped, tally.notFound, tally.failed)
	g.Log.WithFields(logrus.Fields{FieldUser: user, "retried": tally.done, "not_found": tally.notFound}).Info("retry finished")
	return tally.err("retried")
}

// retryBatch retries ids and prints one line per ID.
func retryBatch(ctx context.Context, g *Globals, st state.Store, ids []string, tally *idTally) error {
	res, err := st.Retry(ctx, ids)
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	reportResults(g, ids, res, func(id string, err error) (string, *int) {
		switch {
		case err == nil:
			return "queued again", &tally.done
		case isNotFound(err):
			return "not found", &tally.notFound
		case errors.Is(err, state.ErrNotTerminal):
			return "not terminal, nothing to retry", &tally.skipped
		}
		return fmt.Sprintf("error: %v", err), &tally.failed
	})
	return nil
}
