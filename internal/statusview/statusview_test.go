package statusview_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// TestSelection_Filter: each filter's bad value is a SelectionError naming
// the filter; good values make the filter aso list applies.
func TestSelection_Filter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		sel  statusview.Selection
		name string
	}{
		{statusview.Selection{States: []string{"bogus"}}, "in-state"},
		{statusview.Selection{Link: "A-B"}, "link"},
		{statusview.Selection{LFN: "/store/[x"}, "lfn"},
		{statusview.Selection{Class: "no-such-class"}, "error-class"},
		{statusview.Selection{Since: "-2h"}, "since"},
		{statusview.Selection{Since: "yesterday"}, "since"},
	} {
		_, err := c.sel.Filter("alice", now)
		var se *statusview.SelectionError
		if !errors.As(err, &se) || se.Name != c.name {
			t.Errorf("%+v: error %v, want one about %s", c.sel, err, c.name)
		}
	}
	f, err := (&statusview.Selection{States: []string{"failed", " new", "failed"}, Link: "A->B", Class: "no_space", Since: "2h"}).Filter("alice", now)
	want := state.Filter{User: "alice", States: []state.State{state.StateFailed, state.StateNew}, Link: "A->B", ErrorClass: "no_space", Since: now.Add(-2 * time.Hour)}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Fatalf("filter %+v %v, want %+v", f, err, want)
	}
}

// TestReasons: groups with a reason are summed across users and links,
// most frequent first, failed apart from retrying; keep selects groups.
func TestReasons(t *testing.T) {
	g := func(user string, st state.State, link, class, reason string, n int) state.CountGroup {
		return state.CountGroup{CountKey: state.CountKey{User: user, State: st, Link: link, ErrorClass: class, Reason: reason}, Count: n}
	}
	groups := []state.CountGroup{
		g("alice", state.StateFailed, "A->B", "no_space", "DESTINATION [28] No space", 2),
		g("bob", state.StateFailed, "C->D", "no_space", "DESTINATION [28] No space", 3),
		g("bob", state.StateNew, "C->D", "timeout", "TRANSFER [110] timed out", 4),
		g("bob", state.StateNew, "C->D", "", "", 100),
		g("bob", state.StateDone, "C->D", "", "", 100),
	}
	got := statusview.Reasons(groups, nil)
	want := []statusview.ReasonCount{
		{Reason: "DESTINATION [28] No space", State: statusview.ReasonFailed, Count: 5, ErrorClass: "no_space"},
		{Reason: "TRANSFER [110] timed out", State: statusview.ReasonRetrying, Count: 4, ErrorClass: "timeout"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons %+v, want %+v", got, want)
	}
	alice := statusview.Reasons(groups, func(g *state.CountGroup) bool { return g.User == "alice" })
	if len(alice) != 1 || alice[0].Count != 2 {
		t.Fatalf("alice's reasons %+v", alice)
	}
}
