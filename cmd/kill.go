package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/admin"
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
	o.Act.AddFlags(cmd.Flags(), fmt.Sprintf("a kill of more than %d transfers, or of --all,", admin.AskAbove))
	o.Select.AddFlags(cmd.Flags())
}

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
	a := admin.Kill()
	a.JSON, a.All = o.JSON, o.All
	return actOn(ctx, g, a, o.IDs, "all", &o.Select, o.Act)
}
