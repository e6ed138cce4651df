package couch

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// TestPickLeaf states the conflict rules leaf by leaf: the leaf furthest
// along the life cycle wins (done, killed, failed, submitted, acquired with
// a sid, acquired, new); among equals the lock holder's; then the newest;
// and CouchDB's own winner (the first leaf) when nothing tells them apart.
func TestPickLeaf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := func(st state.State, owner, sid string, ago time.Duration) leaf {
		return leaf{rev: string(st) + "/" + owner, t: state.Transfer{State: st, Owner: owner, SubmitSID: sid, LastUpdate: state.At(t0.Add(-ago))}}
	}
	for _, c := range []struct {
		name   string
		leaves []leaf
		holder string
		want   int
	}{
		{"done over killed", []leaf{l(state.StateKilled, "a", "", 0), l(state.StateDone, "b", "", time.Hour)}, "a", 1},
		{"killed over failed", []leaf{l(state.StateFailed, "a", "", 0), l(state.StateKilled, "b", "", time.Hour)}, "a", 1},
		{"failed over submitted", []leaf{l(state.StateSubmitted, "a", "s", 0), l(state.StateFailed, "b", "", time.Hour)}, "a", 1},
		{"submitted over acquired with a sid", []leaf{l(state.StateAcquired, "a", "s", 0), l(state.StateSubmitted, "b", "s", time.Hour)}, "a", 1},
		{"acquired with a sid over a bare claim", []leaf{l(state.StateAcquired, "a", "", 0), l(state.StateAcquired, "b", "s", time.Hour)}, "a", 1},
		{"a claim over new", []leaf{l(state.StateNew, "", "", 0), l(state.StateAcquired, "b", "", time.Hour)}, "", 1},
		{"the holder's among equals, though older", []leaf{l(state.StateAcquired, "a", "", 0), l(state.StateAcquired, "b", "", time.Hour)}, "b", 1},
		{"the newest among equals of other owners", []leaf{l(state.StateAcquired, "a", "", time.Hour), l(state.StateAcquired, "b", "", 0)}, "c", 1},
		{"CouchDB's winner when nothing differs", []leaf{l(state.StateFailed, "a", "", 0), l(state.StateFailed, "b", "", 0)}, "", 0},
		{"the best of three", []leaf{l(state.StateSubmitted, "a", "s", 0), l(state.StateDone, "b", "", time.Hour), l(state.StateFailed, "c", "", 0)}, "a", 1},
	} {
		if got := pickLeaf(c.leaves, c.holder); got != c.want {
			t.Errorf("%s: kept %s, want %s", c.name, c.leaves[got].rev, c.leaves[c.want].rev)
		}
	}
}

// TestResolved: the document that ends a conflict is the kept leaf's
// content written on CouchDB's winner (the first leaf), with a kill request
// from any other leaf unless it has ended, a history entry naming what was
// kept and set aside, and every other leaf (the kept one too, when it is not
// the winner) added to the revisions superseded before.
func TestResolved(t *testing.T) {
	now := state.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	killed := state.Transfer{State: state.StateAcquired, Owner: "b", KillRequested: true}
	for _, c := range []struct {
		kept     state.Transfer
		wantKill bool
	}{
		{state.Transfer{State: state.StateSubmitted, Owner: "a", Reason: "why"}, true},
		{state.Transfer{State: state.StateDone, Owner: "a", Reason: "why"}, false},
	} {
		leaves := []leaf{{rev: "2-b", t: killed}, {rev: "2-a", t: c.kept}, {rev: "2-c", t: state.Transfer{State: state.StateNew}}}
		got := resolved(leaves, 1, []string{"1-z"}, "host:1:x", now)
		if got.Rev != "2-b" || got.State != c.kept.State || got.KillRequested != c.wantKill || got.Reason != "why" {
			t.Errorf("kept %s: rev %s state %s kill %v reason %q; want 2-b (the winner's), %s, kill %v, the kept reason",
				c.kept.State, got.Rev, got.State, got.KillRequested, got.Reason, c.kept.State, c.wantKill)
		}
		h := got.History[len(got.History)-1]
		if h.By != "host:1:x" || !strings.Contains(h.Reason, "kept revision 2-a") || !strings.Contains(h.Reason, "set aside 2-b") {
			t.Errorf("kept %s: history %+v, want who resolved it, what was kept and what was set aside", c.kept.State, h)
		}
		if s := string(got.Extra[supersededField]); s != `["1-z","2-a","2-c"]` {
			t.Errorf("kept %s: superseded %s, want the earlier ones, the kept leaf and the other loser", c.kept.State, s)
		}
	}
}
