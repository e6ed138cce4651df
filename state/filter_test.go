package state_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func TestFilter_Matches(t *testing.T) {
	tr := state.Transfer{ID: "x", User: "alice", Source: "A", Destination: "B", State: state.StateFailed}
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
		{"id", state.Filter{IDs: []string{"y", "x"}}, true},
		{"other id", state.Filter{IDs: []string{"y"}}, false},
		{"link", state.Filter{Link: "A->B"}, true},
		{"other link", state.Filter{Link: "B->A"}, false},
		{"all", state.Filter{User: "alice", States: []state.State{state.StateFailed}, IDs: []string{"x"}, Link: "A->B", Limit: 1}, true},
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
