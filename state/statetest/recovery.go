package statetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

var recoveryCases = []testCase{
	{"Recovery/TakeBackDeadAgentsClaims", func(e *env) {
		dead, next := e.store(Alice, "agent-dead"), e.store(Alice, "agent-next")
		bob := e.store(Bob, "agent-bob")
		e.enqueue(dead, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4))
		e.enqueue(bob, Req(Bob, 1))
		if _, err := dead.AcquireLock(ctx, Alice, "agent-dead", time.Minute); err != nil {
			e.t.Fatal(err)
		}
		claimed := e.claim(dead, 3)
		if len(claimed) != 3 {
			e.t.Fatalf("claimed %d, want 3", len(claimed))
		}
		res, err := Prepare(ctx, dead, claimed[:1], "sid-of-the-dead")
		e.ok("PrepareSubmit", res, err, 1)
		bobs := e.claim(bob, 1)
		// the dead agent's lock expires; its leases (10 min) do not
		e.clock.Advance(2 * time.Minute)
		r := next
		if _, err := r.TakeBack(ctx, state.Lock{User: Alice, Holder: "agent-next"}); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("TakeBack without holding the lock: %v, want ErrLockLost", err)
		}
		e.wantState(next, claimed[0].ID, state.StateAcquired)
		if got := e.get(next, claimed[1].ID); got.Owner != "agent-dead" || !got.LeaseExpires.After(e.clock.Now()) {
			e.t.Fatalf("a refused TakeBack wrote: %+v", got)
		}
		l, err := next.AcquireLock(ctx, Alice, "agent-next", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		if got := e.claim(next, 10); len(got) != 1 {
			e.t.Fatalf("before TakeBack the new agent claimed %d, want only the unclaimed one", len(got))
		}
		back, err := r.TakeBack(ctx, l)
		if err != nil {
			e.t.Fatalf("TakeBack: %v", err)
		}
		if len(back) != 3 {
			e.t.Fatalf("TakeBack returned %d transfers, want the dead agent's 3 (not its own, not bob's)", len(back))
		}
		now := e.clock.Now()
		for _, c := range claimed {
			got := e.wantState(next, c.ID, state.StateAcquired)
			h := got.History[len(got.History)-1]
			if got.LeaseExpires.After(now) || h.By != "agent-next" || !strings.Contains(h.Reason, "agent-dead") {
				e.t.Fatalf("transfer %s after TakeBack: lease %s, last history %+v", c.ID, got.LeaseExpires, h)
			}
		}
		if got := e.get(next, claimed[0].ID); got.SubmitSID != "sid-of-the-dead" {
			e.t.Fatalf("TakeBack dropped the submit_sid (%q): the job may be in FTS", got.SubmitSID)
		}
		if got := e.get(bob, bobs[0].ID); got.Owner != "agent-bob" || !got.LeaseExpires.After(now) {
			e.t.Fatalf("another user's claim was touched: %+v", got)
		}
		if again, err := r.TakeBack(ctx, l); err != nil || len(again) != 0 {
			e.t.Fatalf("second TakeBack: %d, %v; want nothing left to take back", len(again), err)
		}
		got := e.claim(next, 10)
		if len(got) != 3 {
			e.t.Fatalf("claimed %d after TakeBack, want 3", len(got))
		}
		for _, tr := range got {
			if tr.ID == claimed[0].ID && tr.SubmitSID != "sid-of-the-dead" {
				e.t.Fatalf("the claim of a taken-back transfer lost its submit_sid")
			}
		}
	}},
	{"Recovery/BackendChecksFence", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		fenced := state.WithFence(ctx, func() error { return fmt.Errorf("thawed too late: %w", state.ErrLockLost) })
		if _, err := s.NewTransfers(fenced, state.ClaimRequest{Limit: 10}); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("NewTransfers under a closed fence: %v, want ErrLockLost", err)
		}
		if got := e.wantState(s, id, state.StateNew); got.Owner != "" {
			e.t.Fatalf("claimed under a closed fence: %+v", got)
		}
		open := state.WithFence(ctx, func() error { return nil })
		if got, err := s.NewTransfers(open, state.ClaimRequest{Limit: 10}); err != nil || len(got.Transfers) != 1 {
			e.t.Fatalf("NewTransfers under an open fence: %d, %v", len(got.Transfers), err)
		}
	}},
}
