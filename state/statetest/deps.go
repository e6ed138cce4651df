package statetest

import (
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

var depCases = []testCase{
	{"NewTransfers/DependencyCycle", func(e *env) {
		s := e.store(Alice, "agent-a")
		a, b, c, d := Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4)
		a.DependsOn = []string{b.ID()}
		b.DependsOn = []string{c.ID()}
		c.DependsOn = []string{a.ID()}
		d.DependsOn = []string{a.ID()} // outside the cycle: fails with it
		free := e.enqueue(s, Req(Alice, 5))[0]
		e.enqueue(s, a, b, c, d)
		got := e.claim(s, 10)
		if len(got) != 1 || got[0].ID != free {
			e.t.Fatalf("claimed %v, want only %s", ids(got), free)
		}
		// every member fails in this claim: the first one judged names
		// the whole cycle; the others may name it too, or the member
		// that failed before them
		cycles := 0
		for _, r := range []state.Request{a, b, c} {
			tr := e.wantState(s, r.ID(), state.StateFailed)
			switch {
			case strings.Contains(tr.Reason, "cycle") && strings.Contains(tr.Reason, a.ID()) && strings.Contains(tr.Reason, b.ID()) && strings.Contains(tr.Reason, c.ID()):
				cycles++
			case !strings.Contains(tr.Reason, "is failed"):
				e.t.Fatalf("reason %q names neither the cycle nor a failed member", tr.Reason)
			}
		}
		if cycles == 0 {
			e.t.Fatal("no member's reason names the cycle")
		}
		e.claim(s, 10)
		if tr := e.wantState(s, d.ID(), state.StateFailed); !strings.Contains(tr.Reason, a.ID()) {
			e.t.Fatalf("dependent of the cycle: reason %q does not name its dependency", tr.Reason)
		}
	}},
	{"NewTransfers/UnknownDependencyWait", func(e *env) {
		s := e.store(Alice, "agent-a")
		r := Req(Alice, 1)
		unknown := ReqID(Alice, 99)
		r.DependsOn = []string{unknown}
		late := Req(Alice, 2)
		late.DependsOn = []string{ReqID(Alice, 3)}
		id := e.enqueue(s, r, late)[0]
		e.clock.Advance(state.DefaultDependencyWait - time.Minute)
		if got := e.claim(s, 10); len(got) != 0 {
			e.t.Fatalf("claimed %v with unknown dependencies", ids(got))
		}
		e.wantState(s, id, state.StateNew)
		e.enqueue(s, Req(Alice, 3)) // the dependency of late arrives in time
		e.clock.Advance(time.Minute)
		got := e.claim(s, 10)
		if len(got) != 1 || got[0].ID != ReqID(Alice, 3) {
			e.t.Fatalf("claimed %v, want only the dependency enqueued late", ids(got))
		}
		tr := e.wantState(s, id, state.StateFailed)
		if !strings.Contains(tr.Reason, unknown) || !strings.Contains(tr.Reason, "unknown") {
			e.t.Fatalf("reason %q does not name the unknown dependency", tr.Reason)
		}
		e.wantState(s, late.ID(), state.StateNew)
	}},
}
