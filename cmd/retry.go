package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/verify"
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
	o.Act.AddFlags(cmd.Flags(), fmt.Sprintf("a retry of more than %d transfers, or of --failed,", admin.AskAbove))
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
	a := admin.Retry()
	if o.Select.Verified != "" {
		in := &srm.Inspector{Timeout: srm.DefaultTimeout, Proxy: rmProxy("", g), CertDir: g.getenv("X509_CERT_DIR")}
		var err error
		if a, err = admin.RetryVerified(o.Select.Verified, &verify.Verifier{Inspector: in}); err != nil {
			return usageError{err}
		}
		a.Warn = func(id string, err error) {
			g.Log.WithError(err).WithField(FieldTransfer, id).Warn("could not record why the transfer was not queued again")
		}
	}
	a.JSON, a.All = o.JSON, o.Failed
	return actOn(ctx, g, a, o.IDs, "failed", &o.Select, o.Act)
}
