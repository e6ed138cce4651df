package statetest

import (
	"reflect"
	"time"

	"github.com/asyncstageout/aso/state"
)

var linkCases = []testCase{
	{"NewTransfers/SpreadAndCap", func(e *env) {
		s := e.store(Alice, "agent-a")
		// a slow link's backlog first, then two transfers of a fast link
		var slow, fast []string
		for i := 0; i < 6; i++ {
			slow = append(slow, e.enqueue(s, Req(Alice, i))[0])
			e.clock.Advance(time.Second)
		}
		for i := 0; i < 2; i++ {
			r := Req(Alice, 100+i)
			r.Source = "T2_XX_Fast"
			r.Priority = i // the last one queued is claimed first: priority first
			fast = append(fast, e.enqueue(s, r)[0])
			e.clock.Advance(time.Second)
		}
		slowLink := Src + "->" + Dst
		// 2 of the slow link are held already: the cap of 3 leaves room for one
		c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10, MaxPerLink: 3, Held: map[string]int{slowLink: 2}})
		got := c.Transfers
		if err != nil {
			e.t.Fatal(err)
		}
		if want := []string{fast[1], slow[0], fast[0]}; !reflect.DeepEqual(ids(got), want) {
			e.t.Fatalf("claimed %v, want the high-priority fast one, then the slow link's oldest and the other fast one %v", ids(got), want)
		}
		for _, tr := range got {
			e.wantState(s, tr.ID, state.StateAcquired)
		}
		e.wantState(s, slow[1], state.StateNew)
		// without a cap the links take turns: the rest of the slow link
		c, err = s.NewTransfers(ctx, state.ClaimRequest{Limit: 2, MaxPerLink: 10})
		got = c.Transfers
		if err != nil {
			e.t.Fatal(err)
		}
		if want := slow[1:3]; !reflect.DeepEqual(ids(got), want) {
			e.t.Fatalf("claimed %v, want %v", ids(got), want)
		}
	}},
}
