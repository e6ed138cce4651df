package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/state"
)

// ListOptions are the flags of `aso list`.
type ListOptions struct {
	Select SelectOptions
	JSON   bool
	Limit  int
}

// AddFlags registers the flags of `aso list`.
func (o *ListOptions) AddFlags(cmd *cobra.Command) {
	o.Select.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON lines: one transfer document per line")
	cmd.Flags().IntVar(&o.Limit, "limit", 0, "print at most this many transfers")
}

func newListCommand(g *Globals) *cobra.Command {
	o := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list [filters]",
		Short: "List the transfers the filters select, oldest first",
		Long: "list prints the transfers of --user (the login name by default; --all-users: everyone)\n" +
			"that every given filter selects, oldest created first: a table with the first 16 digits\n" +
			"of each ID (enough for status, kill and retry), ATTEMPTS (submissions to FTS, from the\n" +
			"history; N+ when the history was cut) and FAILED (failed attempts, counted against\n" +
			"--max-attempts and reset by aso retry), or with --json one transfer document\n" +
			"per line (JSON lines), every field and its history. Transfers are read a page at a time,\n" +
			"so any number of them can be listed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runList(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runList(ctx context.Context, o *ListOptions, g *Globals) error {
	f, err := o.Select.filter(g, time.Now())
	if err != nil {
		return err
	}
	return withStore(readOnly(ctx), g, f.User, func(st state.Store) error {
		if o.JSON {
			out := newJSONLines(g.Stdout)
			return admin.Pages(ctx, st, f, o.Limit, func(ts []state.Transfer) error {
				for i := range ts {
					if err := out.write(&ts[i]); err != nil {
						return err
					}
				}
				return nil
			})
		}
		n := 0
		err := admin.Pages(ctx, st, f, o.Limit, func(ts []state.Transfer) error {
			n += len(ts)
			return printListPage(g, ts, n == len(ts))
		})
		if err == nil && n == 0 {
			fmt.Fprintln(g.Stderr, "aso: no transfer matches")
		}
		return err
	})
}

// printListPage prints one page of the table; header says it is the first.
func printListPage(g *Globals, ts []state.Transfer, header bool) error {
	tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "ID\tUSER\tSTATE\tATTEMPTS\tFAILED\tUPDATED\tLINK\tDESTINATION LFN\tREASON")
	}
	for i := range ts {
		t := &ts[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.ID[:min(16, len(t.ID))], t.User, stateText(t), submissionsText(t), t.Attempts,
			t.LastUpdate.UTC().Format(time.DateTime), t.Link(), t.DestinationLFN, oneLine(t.Reason, 80))
	}
	return tw.Flush()
}

// stateText is the state of t, marked when a kill was asked for.
func stateText(t *state.Transfer) string {
	if t.KillRequested && !t.State.Terminal() {
		return string(t.State) + "(kill)"
	}
	return string(t.State)
}

// oneLine returns s on one line, cut to at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}
