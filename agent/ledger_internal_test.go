package agent

import (
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestLinkCounts: a monitor phase's count replaces the last one, except
// that after an error no link is counted emptier than before.
func TestLinkCounts(t *testing.T) {
	tr := func(src string) state.Transfer { return state.Transfer{Source: src, Destination: "H"} }
	jobs := []state.Job{{ID: "j", Transfers: []state.Transfer{tr("S"), tr("S"), tr("F")}}}
	var l linkCounts
	ps := &tally{}
	done := l.begin(ps)
	l.observe(jobs, []outcome{{t: &jobs[0].Transfers[2]}}) // F's transfer ended
	done()
	if l.submitted["S->H"] != 2 || l.submitted["F->H"] != 0 {
		t.Fatalf("after a clean phase %v, want S->H 2, F->H 0", l.submitted)
	}
	done = l.begin(ps)
	l.observe([]state.Job{{ID: "k", Transfers: []state.Transfer{tr("F")}}}, nil)
	ps.ps.Errors++ // a group could not be listed
	done()
	if l.submitted["S->H"] != 2 || l.submitted["F->H"] != 1 {
		t.Fatalf("after a phase with an error %v, want S->H kept at 2 and F->H 1", l.submitted)
	}
	done = l.begin(ps)
	done()
	if len(l.submitted) != 0 {
		t.Fatalf("after a clean phase with nothing active %v, want nothing", l.submitted)
	}
}
