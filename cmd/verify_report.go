package cmd

import (
	"fmt"

	"github.com/asyncstageout/aso/verify"
)

// verifyReport prints the outcome of each transfer aso verify checked,
// as text or JSON lines, and shows the progress.
type verifyReport struct {
	g    *Globals
	out  jsonLines // zero: text
	view *opView
}

func newVerifyReport(g *Globals, json bool, view *opView) *verifyReport {
	r := &verifyReport{g: g, view: view}
	if json {
		r.out = newJSONLines(g.Stdout)
	}
	return r
}

// line prints o and updates the progress with the totals so far.
func (r *verifyReport) line(o verify.Outcome, sofar verify.Totals) {
	if r.out.enc != nil {
		_ = r.out.write(o)
	} else {
		text := string(o.Result)
		if o.Detail != "" {
			text += " (" + o.Detail + ")"
		}
		if o.NotRecorded != "" {
			text += "; not recorded: " + o.NotRecorded
		}
		fmt.Fprintf(r.g.Stdout, "%s: %s\n", o.ID, text)
	}
	r.view.update(int64(sofar.Checked()), fmt.Sprintf("%s present, %s missing, %s differ, %s unreadable",
		thousands(sofar.Present), thousands(sofar.Missing), thousands(sofar.Differs), thousands(sofar.Unreadable)))
}

// totals prints the totals: the last line.
func (r *verifyReport) totals(t verify.Totals) {
	if r.out.enc != nil {
		_ = r.out.write(struct {
			Totals verify.Totals `json:"totals"`
		}{t})
		return
	}
	fmt.Fprintln(r.g.Stdout, t.String())
}
