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

// RetryOptions are the flags and arguments of `aso retry`.
type RetryOptions struct {
	Failed bool
	JSON   bool
	Act    ActOptions
	Select SelectOptions
	IDs    []string
}

// AddFlags registers the flags of `aso retry`.
func (o *RetryOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.Failed, "failed", false, "retry every failed transfer of the user (killed ones are left alone)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON lines: one {id, outcome, state, detail} per transfer")
	o.Act.AddFlags(cmd.Flags(), fmt.Sprintf("a retry of more than %d transfers, or of --failed,", askAbove))
	o.Select.AddFlags(cmd.Flags())
}

func newRetryCommand(g *Globals) *cobra.Command {
	o := &RetryOptions{}
	cmd := &cobra.Command{
		Use:   "retry ID...|--failed|filters",
		Short: "Queue ended transfers (failed, killed or done) again, with their attempts reset",
		Long: "retry returns terminal transfers to new with their attempts reset, so that the next agent\n" +
			"run submits them again. An ID may be shortened to a unique prefix of at least 8 digits.\n" +
			"With --user, only that user's transfers are retried. --failed retries every failed\n" +
			"transfer of --user; the filters of `aso list` (--in-state, --link, --lfn, --fts-job, --since,\n" +
			"--all-users) select the transfers to retry instead, the failed ones unless --in-state is\n" +
			"given. --verified missing (or differs) selects the ended transfers whose last aso verify\n" +
			"found their file missing (or different) and queues again those whose source gfal-stat\n" +
			"still finds; the others stay as they are, their verification's history entry and the\n" +
			"output saying why. The history of each transfer records who asked (login@host) and when. --dry-run\n" +
			"prints what would change and changes nothing. On a terminal, a retry of --failed or of\n" +
			"more than 100 transfers asks first (--yes does not). Exits 1 if an ID is unknown.",
		RunE: func(cmd *cobra.Command, args []string) error { o.IDs = args; return runRetry(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runRetry(ctx context.Context, o *RetryOptions, g *Globals) error {
	c := idCommand{verb: "retry", allFlag: "failed", all: o.Failed, batch: retryBatch, states: []state.State{state.StateFailed}, sel: &o.Select,
		json: o.JSON, act: o.Act, would: retryWould, effect: "queued again as new, attempts reset"}
	if o.Select.Verified != "" {
		if err := retryVerified(&c, o, g); err != nil {
			return err
		}
	}
	user, tally, err := c.run(ctx, g, o.IDs)
	if err != nil || o.Act.DryRun {
		return cmp.Or(err, tally.err("retried"))
	}
	if !o.JSON {
		fmt.Fprintf(g.Stdout, "%d queued again, %d not terminal, %d not found, %d failed\n", tally.done, tally.skipped, tally.notFound, tally.failed)
	}
	g.Log.WithFields(logrus.Fields{FieldUser: user, "retried": tally.done, "not_terminal": tally.skipped,
		"not_found": tally.notFound, "failed": tally.failed}).Info("retry finished")
	return tally.err("retried")
}

// retryWould says what a retry would do to t.
func retryWould(t *state.Transfer) (IDOutcome, bool) {
	if !t.State.Terminal() {
		return IDOutcome{Outcome: "not_terminal", text: "not terminal, nothing to retry"}, false
	}
	return IDOutcome{Outcome: "would_queue_again"}, true
}

// retryBatch retries ids and reports each.
func retryBatch(ctx context.Context, st state.Store, ids []string, rep *idReport) error {
	if len(ids) == 0 {
		return nil
	}
	res, err := st.Retry(ctx, ids)
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	tally := &rep.tally
	rep.results(ids, res, func(_ string, err error) (IDOutcome, *int) {
		switch {
		case err == nil:
			return IDOutcome{Outcome: "queued_again", State: string(state.StateNew)}, &tally.done
		case isNotFound(err):
			return IDOutcome{Outcome: "not_found"}, &tally.notFound
		case errors.Is(err, state.ErrNotTerminal):
			return IDOutcome{Outcome: "not_terminal", text: "not terminal, nothing to retry"}, &tally.skipped
		}
		return IDOutcome{Outcome: "error", Detail: err.Error(), text: "error: " + err.Error()}, &tally.failed
	})
	return nil
}
