package statetest

import (
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

// windowCases hold claims to the order between calls and to
// state.QueueEnder: what a store that goes on down its queue (within
// state.StaleClaimWindow) may and may not do.
var windowCases = []testCase{
	{"NewTransfers/QueuedBetweenClaims", func(e *env) {
		// the rest of the queue is short of the second claim's limit: the
		// transfer queued after the first claim is claimed with it
		s := e.store(Alice, "agent-a")
		old := e.enqueueEach(s, 0, 4, 0)
		first := e.claim(s, 2)
		late := e.enqueue(s, Req(Alice, 10))[0]
		got := ids(e.claim(s, 10))
		want := []string{old[2], old[3], late}
		slices.Sort(got)
		slices.Sort(want)
		if len(first) != 2 || !slices.Equal(got, want) {
			e.t.Fatalf("second claim %v, want the rest of the queue and the transfer queued since %v", got, want)
		}
	}},
	{"NewTransfers/KilledAfterTheLastClaim", func(e *env) {
		// the transfers right after the last claim were killed since: the
		// claim still fills its limit with the due ones further down
		s := e.store(Alice, "agent-a")
		all := e.enqueueEach(s, 0, 60, 0)
		e.claim(s, 5)
		res, err := s.RequestKill(ctx, all[5:55])
		e.ok("RequestKill", res, err, 50)
		got := ids(e.claim(s, 5))
		slices.Sort(got)
		want := slices.Clone(all[55:])
		slices.Sort(want)
		if !slices.Equal(got, want) {
			e.t.Fatalf("claimed %v, want the five due transfers after the killed ones %v", got, want)
		}
	}},
	{"NewTransfers/PriorityWithinTheWindow", func(e *env) {
		// a transfer of a higher priority queued while a backlog drains
		// is claimed first once state.StaleClaimWindow has passed
		s := e.store(Alice, "agent-a")
		backlog := e.enqueueEach(s, 0, 8, 0)
		e.claim(s, 2)
		r := Req(Alice, 10)
		r.Priority = 5
		urgent := e.enqueue(s, r)[0]
		held := ids(e.claim(s, 2))
		e.clock.Advance(state.StaleClaimWindow)
		next := ids(e.claim(s, 1))
		if !slices.Contains(held, urgent) && !slices.Equal(next, []string{urgent}) {
			e.t.Fatalf("claims %v then %v after the window: the priority-5 transfer %s was not claimed first", held, next, urgent)
		}
		rest := ids(e.claim(s, 10))
		all := append(append(append([]string{}, held...), next...), rest...)
		if len(all) != len(backlog)+1-2 {
			e.t.Fatalf("claimed %d transfers after the first claim, want %d", len(all), len(backlog)-1)
		}
	}},
	{"NewTransfers/End", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueueEach(s, 0, 7, 0)
		claim := func(limit, want int, wantEnd bool) {
			e.t.Helper()
			c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: limit})
			if err != nil || len(c.Transfers) != want || c.End != wantEnd {
				e.t.Fatalf("NewTransfers(%d) = %d, end %v, %v; want %d, end %v", limit, len(c.Transfers), c.End, err, want, wantEnd)
			}
		}
		claim(3, 3, false) // four are due behind them
		claim(3, 3, false) // one
		claim(3, 1, true)  // the last
		claim(3, 0, true)  // none
		// a transfer back in the queue is due again: the end is not reported
		// while it waits
		e.clock.Advance(Policy.LeaseTTL + time.Second)
		claim(5, 5, false)
	}},
}
