package state_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// TestYieldTo: a transfer that has just recorded its ownership yields to
// another active transfer that is submitted or recorded its ownership
// first (earlier, or at the same time with a lower ID), to nothing else;
// of two that recorded theirs, exactly one yields.
func TestYieldTo(t *testing.T) {
	at := func(d time.Duration) state.Time { return state.At(t0.Add(d)) }
	me := state.Transfer{ID: "m", DestOwnedSince: at(0)}
	for _, tc := range []struct {
		name string
		ref  state.DestRef
		want bool
	}{
		{"earlier", state.DestRef{ID: "z", State: state.StateAcquired, Owned: true, OwnedSince: at(-time.Second)}, true},
		{"later", state.DestRef{ID: "a", State: state.StateAcquired, Owned: true, OwnedSince: at(time.Second)}, false},
		{"same time, lower ID", state.DestRef{ID: "a", State: state.StateAcquired, Owned: true, OwnedSince: at(0)}, true},
		{"same time, higher ID", state.DestRef{ID: "z", State: state.StateAcquired, Owned: true, OwnedSince: at(0)}, false},
		{"submitted, later", state.DestRef{ID: "z", State: state.StateSubmitted, Owned: true, OwnedSince: at(time.Hour)}, true},
		{"waiting, earlier", state.DestRef{ID: "z", State: state.StateNew, Owned: true, OwnedSince: at(-time.Hour)}, true},
		{"not owned", state.DestRef{ID: "a", State: state.StateAcquired}, false},
		{"an older view: no time", state.DestRef{ID: "a", State: state.StateAcquired, Owned: true}, false},
		{"done", state.DestRef{ID: "a", State: state.StateDone, Owned: true, OwnedSince: at(-time.Hour)}, false},
		{"failed", state.DestRef{ID: "a", State: state.StateFailed, Owned: true, OwnedSince: at(-time.Hour)}, false},
		{"itself", state.DestRef{ID: "m", State: state.StateSubmitted, Owned: true, OwnedSince: at(0)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, got := state.YieldTo(&me, []state.DestRef{tc.ref})
			if got != tc.want || got && r.ID != tc.ref.ID {
				t.Fatalf("YieldTo = %+v, %v; want %v", r, got, tc.want)
			}
			if tc.ref.State != state.StateAcquired || !tc.ref.Owned || tc.ref.OwnedSince.IsZero() {
				return
			}
			// the other, in turn, against me: exactly one of the two yields
			other := state.Transfer{ID: tc.ref.ID, DestOwnedSince: tc.ref.OwnedSince}
			_, back := state.YieldTo(&other, []state.DestRef{{ID: me.ID, State: state.StateAcquired, Owned: true, OwnedSince: me.DestOwnedSince}})
			if back == got {
				t.Fatalf("both yield, or neither: %v and %v", got, back)
			}
		})
	}
}
