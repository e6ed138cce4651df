package cmd

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/asyncstageout/aso/internal/statusview"
)

// printLocks prints the run locks table of `aso status`.
func printLocks(w io.Writer, locks []statusview.LockView) {
	titledTable(w, "Run locks", len(locks), "USER\tLOCK\tHOST\tPID\tSINCE\tEXPIRES\tLAST RUN STARTED\tENDED\tEXIT", func(tw io.Writer) {
		for _, l := range locks {
			fmt.Fprintln(tw, lockRow(&l))
		}
	})
}

// lockRow is the row of l in the run locks table.
func lockRow(l *statusview.LockView) string {
	lock := l.State()
	host, pid, since, exp := "-", "-", "-", "-"
	if lock != "free" {
		host, since, exp = cmp.Or(l.Host, "-"), cmp.Or(l.Since.String(), "-"), l.Expires.String()
		if l.PID > 0 {
			pid = fmt.Sprint(l.PID)
		}
	}
	started, ended, code := "-", "-", "-"
	if r := l.LastRun; r != nil {
		started, ended, code = cmp.Or(r.Started.String(), "-"), cmp.Or(r.Ended.String(), "-"), fmt.Sprint(r.ExitCode)
		if r.ExitCode < 0 {
			code = "unknown: " + r.Error
		}
		if r.By != "" {
			code += " (by " + r.By + ")"
		}
		if r.TookOver != "" {
			code += " (took the lock over from " + r.TookOver + ")"
		}
	}
	return strings.Join([]string{l.User, lock, host, pid, since, exp, started, ended, code}, "\t")
}
