package cmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
	"github.com/spf13/cobra"
)

// StatusOptions are the flags and argument of `aso status`.
type StatusOptions struct {
	ID         string
	JSON       bool
	AllUsers   bool
	StaleAfter time.Duration
}

// AddFlags registers the flags of `aso status`.
func (o *StatusOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print JSON instead of tables")
	f.BoolVar(&o.AllUsers, "all-users", false, "count the transfers of every user, not only --user's; with ID, show the transfer whoever's it is")
	f.DurationVar(&o.StaleAfter, "stale-after", state.DefaultStaleAfter, "report submitted transfers not updated for this long as stale")
}

func newStatusCommand(g *Globals) *cobra.Command {
	o := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "Show the user's transfers by state and link, or one transfer in full",
		Long: "status counts the transfers of --user (the login name by default; --all-users: everyone)\n" +
			"by state and by link, and lists the oldest waiting transfer, stale submitted transfers\n" +
			"(no update from the agent for --stale-after) and stuck acquired transfers. Of one user it\n" +
			"reads that user's transfers only (on CouchDB, views keyed by the user), whatever else the\n" +
			"store holds. --all-users reads every document of the store (showing how many so far, as\n" +
			"--progress says), and also lists the stored documents that are not valid transfers.\n\n" +
			"status ID shows one transfer: every field, FTS progress, retries, and its history.\n" +
			"Attempts are its submissions to FTS (from the history); failed attempts count against\n" +
			"--max-attempts (aso retry resets them). --json adds submissions to the stored document.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.ID = args[0]
			}
			return runStatus(cmd.Context(), o, g)
		},
	}
	o.AddFlags(cmd)
	return cmd
}

func runStatus(ctx context.Context, o *StatusOptions, g *Globals) error {
	ctx = readOnly(ctx)
	if o.ID != "" {
		if o.AllUsers && g.userFlagGiven() {
			return usagef("give --user or --all-users, not both")
		}
		return withStore(ctx, g, g.User, func(st state.Store) error { return showTransfer(ctx, g, st, o) })
	}
	user, err := g.usersOf(o.AllUsers)
	if err != nil {
		return err
	}
	return withStore(ctx, g, user, func(st state.Store) error {
		so := state.SummaryOptions{User: user, StaleAfter: o.StaleAfter}
		var view *opView
		if user == "" { // every document is read: show how far
			view = newOpView(g, "status", 0, documents, g.Progress)
			so.Progress = func(n int) { view.update(int64(n), "read") }
		}
		sum, err := st.Summary(ctx, so)
		if view != nil {
			view.close()
		}
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		reasons, err := statusview.FailureReasons(ctx, st, user)
		if err != nil {
			return err
		}
		locks, err := statusview.Locks(ctx, st, user, time.Now())
		if err != nil {
			return err
		}
		cred := credentialJSON(g)
		if o.JSON {
			out := statusview.NewStatus(user, sum)
			out.FailureReasons = reasons
			out.Locks = statusview.NonNil(locks)
			out.Credential = cred
			return writeJSON(g.Stdout, out)
		}
		if err := printSummary(g.Stdout, user, o.StaleAfter, sum); err != nil {
			return err
		}
		printReasons(g.Stdout, reasons)
		printLocks(g.Stdout, locks)
		if cred != nil {
			fmt.Fprintf(g.Stdout, "\nCouchDB credentials: %s, from %s\n", g.couchCred.Identity, cred.Source)
		}
		return nil
	})
}

// writeJSON writes v as `aso status --json` and the other one-object
// outputs do.
func writeJSON(w io.Writer, v any) error { return statusview.WriteJSON(w, v) }

// printSummary prints the summary as tables.
func printSummary(w io.Writer, user string, staleAfter time.Duration, s state.Summary) error {
	who := "user " + user
	if user == "" {
		who = "all users"
	}
	fmt.Fprintf(w, "Transfers of %s: %d\n\n", who, s.Total)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "STATE\tCOUNT\n")
	for _, st := range state.States {
		fmt.Fprintf(tw, "%s\t%d\n", st, s.ByState[st])
	}
	tw.Flush()
	classTable(w, s.ByErrorClass)
	countTable(w, "LINK", s.ByLink)
	if user == "" {
		countTable(w, "USER", s.ByUser)
	}
	if t := s.OldestWaiting; t != nil {
		fmt.Fprintf(w, "\nOldest waiting: %s, %s, %s since %s, attempts %s, failed attempts %d", t.ID, t.Link(), t.State, t.LastUpdate, submissionsText(t), t.Attempts)
		if !t.RetryAfter.IsZero() {
			fmt.Fprintf(w, ", retry after %s", t.RetryAfter)
		}
		fmt.Fprintln(w)
	}
	if staleAfter == 0 {
		staleAfter = 3 * state.DefaultLeaseTTL
	}
	transferList(w, fmt.Sprintf("Stale submitted transfers (no update for %s)", staleAfter), s.Stale, func(t *state.Transfer) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", t.ID, t.Link(), t.FTSJob, t.LastUpdate)
	}, "ID\tLINK\tFTS JOB\tLAST UPDATE")
	transferList(w, "Stuck acquired transfers (lease expired)", s.StuckAcquired, func(t *state.Transfer) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", t.ID, t.Link(), t.Owner, t.LeaseExpires)
	}, "ID\tLINK\tOWNER\tLEASE EXPIRED")
	if s.Conflicted > 0 {
		fmt.Fprintf(w, "\nConflicted documents (resolved by the user's next agent run): %d\n", s.Conflicted)
	}
	if s.Superseded > 0 {
		fmt.Fprintf(w, "\nResolved conflicts whose set-aside revisions are kept (aso resolve-conflicts deletes them): %d\n", s.Superseded)
	}
	titledTable(w, "Invalid documents (skipped by the agent)", len(s.Invalid), "ID\tREASON", func(tw io.Writer) {
		for _, d := range s.Invalid {
			fmt.Fprintf(tw, "%s\t%s\n", d.ID, d.Reason)
		}
	})
	return nil
}

// classTable prints the failed transfers by error class, in the order of
// state.ErrorClasses (then any other stored class), or nothing without any.
func classTable(w io.Writer, m map[string]int) {
	if len(m) == 0 {
		return
	}
	order := make([]string, 0, len(m))
	for _, c := range state.ErrorClasses {
		if m[string(c)] > 0 {
			order = append(order, string(c))
		}
	}
	var other []string
	for c, n := range m {
		if n > 0 && !state.ErrorClass(c).Valid() {
			other = append(other, c)
		}
	}
	sort.Strings(other)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "FAILED BY ERROR CLASS\tCOUNT\n")
	for _, c := range append(order, other...) {
		fmt.Fprintf(tw, "%s\t%d\n", c, m[c])
	}
	tw.Flush()
}

// countTable prints counts by state of each key (link or user), sorted.
func countTable(w io.Writer, title string, m map[string]map[state.State]int) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{title}
	for _, s := range state.States {
		head = append(head, strings.ToUpper(string(s)))
	}
	fmt.Fprintf(tw, "%s\tTOTAL\n", strings.Join(head, "\t"))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		row, total := []string{k}, 0
		for _, s := range state.States {
			row = append(row, fmt.Sprint(m[k][s]))
			total += m[k][s]
		}
		fmt.Fprintf(tw, "%s\t%d\n", strings.Join(row, "\t"), total)
	}
	tw.Flush()
}

// transferList prints a titled table of transfers, or nothing when ts is empty.
func transferList(w io.Writer, title string, ts []state.Transfer, row func(*state.Transfer) string, head string) {
	titledTable(w, title, len(ts), head, func(tw io.Writer) {
		for i := range ts {
			fmt.Fprintln(tw, row(&ts[i]))
		}
	})
}
