package cmd

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/asyncstageout/aso/internal/statusview"
)

// printDeps prints the dependencies table of `aso status ID`.
func printDeps(w io.Writer, deps []statusview.Dependency) {
	titledTable(w, "Dependencies", len(deps), "ID\tSTATE\tREASON", func(tw io.Writer) {
		for _, d := range deps {
			s := string(d.State)
			if s == "" {
				s = "unknown (not stored)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.ID, s, cmp.Or(d.Reason, "-"))
		}
	})
}

// titledTable prints a blank line, "title: n", and a table of head and the
// rows that rows writes; nothing when n is 0.
func titledTable(w io.Writer, title string, n int, head string, rows func(tw io.Writer)) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d\n", title, n)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	rows(tw)
	tw.Flush()
}
