package state_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func TestFilter_Matches(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := state.Transfer{ID: "x1", User: "alice", Source: "A", Destination: "B", State: state.StateFailed,
		SourceLFN: "/store/temp/a.root", DestinationLFN: "/store/user/a.root", FTSJob: "j1",
		Created: state.At(t0), LastUpdate: state.At(t0.Add(time.Hour))}
	for _, c := range []struct {
		name string
		f    state.Filter
		want bool
	}{
		{"empty", state.Filter{}, true},
		{"user", state.Filter{User: "alice"}, true},
		{"other user", state.Filter{User: "bob"}, false},
		{"state", state.Filter{States: []state.State{state.StateNew, state.StateFailed}}, true},
		{"other state", state.Filter{States: []state.State{state.StateDone}}, false},
		{"id", state.Filter{IDs: []string{"y", "x1"}}, true},
		{"other id", state.Filter{IDs: []string{"y"}}, false},
		{"id prefix", state.Filter{IDPrefix: "x"}, true},
		{"other id prefix", state.Filter{IDPrefix: "x2"}, false},
		{"lfn prefix", state.Filter{LFN: "/store/user/"}, true},
		{"lfn glob", state.Filter{LFN: "/store/*/a.root"}, true},
		{"lfn glob of no lfn", state.Filter{LFN: "/store/*/b.root"}, false},
		{"malformed glob", state.Filter{LFN: "/store/[a"}, false},
		{"fts job", state.Filter{FTSJob: "j1"}, true},
		{"other fts job", state.Filter{FTSJob: "j2"}, false},
		{"since", state.Filter{Since: t0.Add(time.Hour)}, true},
		{"since later", state.Filter{Since: t0.Add(time.Hour + time.Microsecond)}, false},
		{"after an earlier key", state.Filter{After: &state.ListKey{Created: state.At(t0), ID: "x0"}}, true},
		{"after itself", state.Filter{After: &state.ListKey{Created: state.At(t0), ID: "x1"}}, false},
		{"link", state.Filter{Link: "A->B"}, true},
		{"other link", state.Filter{Link: "B->A"}, false},
		{"all", state.Filter{User: "alice", States: []state.State{state.StateFailed}, IDs: []string{"x1"}, Link: "A->B", Limit: 1}, true},
	} {
		if got := c.f.Matches(&tr); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestListLess(t *testing.T) {
	t0 := state.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	older := state.Transfer{ID: "b", Created: t0}
	newer := state.Transfer{ID: "a", Created: state.At(t0.Add(time.Second))}
	sameB := state.Transfer{ID: "c", Created: t0}
	if !state.ListLess(&older, &newer) || state.ListLess(&newer, &older) {
		t.Errorf("older created must come first")
	}
	if !state.ListLess(&older, &sameB) || state.ListLess(&sameB, &older) {
		t.Errorf("same creation time: ID order")
	}
}

func TestSummaryOptions_WithDefaults(t *testing.T) {
	o := state.SummaryOptions{}.WithDefaults()
	if o.StaleAfter != 45*time.Minute || o.MaxListed != 100 {
		t.Errorf("defaults = %+v", o)
	}
	o = state.SummaryOptions{StaleAfter: time.Hour, MaxListed: 3}.WithDefaults()
	if o.StaleAfter != time.Hour || o.MaxListed != 3 {
		t.Errorf("given values overridden: %+v", o)
	}
}
