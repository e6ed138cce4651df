package cmd

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/asyncstageout/aso/internal/statusview"
)

func printReasons(w io.Writer, rs []statusview.ReasonCount) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "COUNT\tSTATE\tCLASS\tREASON\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.Count, r.State, cmp.Or(r.ErrorClass, "-"), r.Reason)
	}
	tw.Flush()
}
