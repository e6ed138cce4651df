package statetest

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

var claimCases = []testCase{
	{"NewTransfers/LimitAndOrder", func(e *env) {
		s := e.store(Alice, "agent-a")
		prio := []int{0, 5, 0, 5, -1}
		want := make([]string, 0, len(prio))
		all := map[int]string{}
		for i, p := range prio {
			r := Req(Alice, i)
			r.Priority = p
			all[i] = e.enqueue(s, r)[0]
			e.clock.Advance(time.Second)
		}
		for _, i := range []int{1, 3, 0, 2, 4} { // priority desc, then oldest first
			want = append(want, all[i])
		}
		got := e.claim(s, 3)
		if !reflect.DeepEqual(ids(got), want[:3]) {
			e.t.Fatalf("first claim %v, want %v", ids(got), want[:3])
		}
		for _, tr := range got {
			stored := e.wantState(s, tr.ID, state.StateAcquired)
			if tr.Rev == "" || tr.Rev != stored.Rev {
				e.t.Fatalf("returned rev %q, stored %q", tr.Rev, stored.Rev)
			}
			if tr.Owner != "agent-a" || stored.Owner != "agent-a" || !stored.LeaseExpires.Equal(e.clock.Now().Add(Policy.LeaseTTL)) {
				e.t.Fatalf("claimed %+v", stored)
			}
		}
		if got := ids(e.claim(s, 10)); !reflect.DeepEqual(got, want[3:]) {
			e.t.Fatalf("second claim %v, want %v", got, want[3:])
		}
		if got := e.claim(s, 10); len(got) != 0 {
			e.t.Fatalf("third claim %v, want nothing", ids(got))
		}
	}},
	{"NewTransfers/RetryAfter", func(e *env) {
		s := e.store(Alice, "agent-a")
		ts := []state.Transfer{e.coolingOff(s, Alice, 1)}
		e.clock.Advance(Policy.CoolOff - time.Second)
		if got := e.claim(s, 5); len(got) != 0 {
			e.t.Fatalf("claimed %v before retry_after", ids(got))
		}
		e.clock.Advance(time.Second)
		if got := e.claim(s, 5); len(got) != 1 || got[0].ID != ts[0].ID {
			e.t.Fatalf("claimed %v after retry_after, want %s", ids(got), ts[0].ID)
		}
	}},
	{"NewTransfers/Dependencies", func(e *env) {
		s := e.store(Alice, "agent-a")
		a := e.enqueue(s, Req(Alice, 1))[0]
		b := Req(Alice, 2)
		b.DependsOn = []string{a}
		c := Req(Alice, 3)
		c.DependsOn = []string{ReqID(Alice, 99)} // never enqueued: waits
		bid := e.enqueue(s, b, c)[0]
		got := e.claim(s, 10)
		if len(got) != 1 || got[0].ID != a {
			e.t.Fatalf("claimed %v, want only %s", ids(got), a)
		}
		res, err := Commit(ctx, s, commitsOf(got), "job-1")
		e.ok("SetTransferID", res, err, 1)
		if got := e.claim(s, 10); len(got) != 0 {
			e.t.Fatalf("claimed %v while the dependency is submitted", ids(got))
		}
		res, err = s.SetTerminalState(ctx, []state.Terminal{{Transfer: e.get(s, a), Outcome: state.OutcomeDone, FTSJob: "job-1"}})
		e.ok("SetTerminalState", res, err, 1)
		if got := e.claim(s, 10); len(got) != 1 || got[0].ID != bid {
			e.t.Fatalf("claimed %v, want %s once its dependency is done", ids(got), bid)
		}
	}},
	{"NewTransfers/FailedDependency", func(e *env) {
		s := e.store(Alice, "agent-a")
		a := e.enqueue(s, Req(Alice, 1))[0]
		e.clock.Advance(time.Second)
		k := e.enqueue(s, Req(Alice, 2))[0]
		b, c, d := Req(Alice, 3), Req(Alice, 4), Req(Alice, 5)
		b.DependsOn = []string{a}
		c.DependsOn = []string{b.ID()}
		d.DependsOn = []string{k}
		e.enqueue(s, b, c, d)
		got := e.claim(s, 1)
		if len(got) != 1 || got[0].ID != a {
			e.t.Fatalf("claimed %v, want the oldest %s", ids(got), a)
		}
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: got[0], Reason: "no such file", Fatal: true}})
		e.ok("AbortTransfers", res, err, 1)
		res, err = s.RequestKill(ctx, []string{k})
		e.ok("RequestKill", res, err, 1)
		for pass := 0; pass < 2; pass++ {
			if got := e.claim(s, 10); len(got) != 0 {
				e.t.Fatalf("pass %d claimed %v; dependents of failed transfers must not run", pass, ids(got))
			}
		}
		for id, dep := range map[string]string{b.ID(): a, c.ID(): b.ID(), d.ID(): k} {
			tr := e.wantState(s, id, state.StateFailed)
			if !strings.Contains(tr.Reason, dep) {
				e.t.Fatalf("reason %q does not name the dependency %s", tr.Reason, dep)
			}
		}
	}},
	{"NewTransfers/KillRequested", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		id := e.enqueue(a, Req(Alice, 1))[0]
		e.claim(a, 1)
		res, err := a.RequestKill(ctx, []string{id})
		e.ok("RequestKill", res, err, 1)
		e.clock.Advance(Policy.LeaseTTL + time.Second)
		if got := e.claim(b, 10); len(got) != 0 {
			e.t.Fatalf("claimed %v with kill_requested", ids(got))
		}
		if tr := e.wantState(b, id, state.StateKilled); tr.Owner != "" {
			e.t.Fatalf("killed transfer still owned by %q", tr.Owner)
		}
	}},
	{"NewTransfers/KillRequestedWithSid", func(e *env) {
		// a transfer whose sid was written may be in FTS (its agent died
		// before the commit): a kill must not settle it before its job is
		// looked up, where it is a cancellation
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		id := e.enqueue(a, Req(Alice, 1))[0]
		got := e.claim(a, 1)
		res, err := Prepare(ctx, a, got, "sid-of-the-dead")
		e.ok("PrepareSubmit", res, err, 1)
		res, err = a.RequestKill(ctx, []string{id})
		e.ok("RequestKill", res, err, 1)
		e.clock.Advance(Policy.LeaseTTL + time.Second)
		claimed := e.claim(b, 10)
		if len(claimed) != 1 || claimed[0].ID != id || claimed[0].SubmitSID != "sid-of-the-dead" || !claimed[0].KillRequested {
			e.t.Fatalf("claimed %+v; want the transfer, with its sid and its kill request", claimed)
		}
	}},
	{"AbortTransfers/KillRequested", func(e *env) {
		// a submission that did not happen costs a transfer whose kill was
		// requested meanwhile no attempt: it is released, and the next
		// claim ends it killed
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		got := e.claim(s, 1)
		res, err := s.RequestKill(ctx, []string{id})
		e.ok("RequestKill", res, err, 1)
		res, err = s.AbortTransfers(ctx, []state.Abort{{Transfer: got[0], Reason: "FTS refused the submission"}})
		e.ok("AbortTransfers", res, err, 1)
		if tr := e.wantState(s, id, state.StateNew); tr.Attempts != 0 || !tr.RetryAfter.IsZero() {
			e.t.Fatalf("after the abort: %d attempts, retry after %v; want none and at once", tr.Attempts, tr.RetryAfter)
		}
		if got := e.claim(s, 10); len(got) != 0 {
			e.t.Fatalf("claimed %v with kill_requested", ids(got))
		}
		e.wantState(s, id, state.StateKilled)
	}},
	{"NewTransfers/OwnUserOnly", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		aliceIDs := e.enqueue(a, Req(Alice, 1), Req(Alice, 2))
		bobIDs := e.enqueue(a, Req(Bob, 1))
		if got := ids(e.claim(a, 10)); len(got) != 2 || got[0] != aliceIDs[0] || got[1] != aliceIDs[1] {
			e.t.Fatalf("alice's agent claimed %v, want %v", got, aliceIDs)
		}
		if got := ids(e.claim(b, 10)); !reflect.DeepEqual(got, bobIDs) {
			e.t.Fatalf("bob's agent claimed %v, want %v", got, bobIDs)
		}
	}},
	{"NewTransfers/ExclusiveClaims", func(e *env) {
		const agents, n = 8, 120
		stores := make([]state.Store, agents)
		for i := range stores {
			stores[i] = e.store(Alice, fmt.Sprintf("agent-%d", i))
		}
		reqs := make([]state.Request, n)
		for i := range reqs {
			reqs[i] = Req(Alice, i)
		}
		all := e.enqueue(stores[0], reqs...)
		claimed := make([][]state.Transfer, agents)
		errs := make([]error, agents)
		var wg sync.WaitGroup
		for i := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c, err := stores[i].NewTransfers(ctx, state.ClaimRequest{Limit: 7})
					ts := c.Transfers
					if err != nil || len(ts) == 0 {
						errs[i] = err
						return
					}
					claimed[i] = append(claimed[i], ts...)
				}
			}()
		}
		wg.Wait()
		owner := map[string]int{}
		for i, ts := range claimed {
			if errs[i] != nil {
				e.t.Fatalf("agent %d: %v", i, errs[i])
			}
			for _, tr := range ts {
				if j, dup := owner[tr.ID]; dup {
					e.t.Fatalf("transfer %s claimed by agents %d and %d", tr.ID, j, i)
				}
				owner[tr.ID] = i
				if got := e.get(stores[0], tr.ID).Owner; got != fmt.Sprintf("agent-%d", i) {
					e.t.Fatalf("transfer %s claimed by agent %d is owned by %q", tr.ID, i, got)
				}
			}
		}
		for _, id := range all {
			if _, ok := owner[id]; !ok {
				e.t.Fatalf("transfer %s was never claimed", id)
			}
		}
	}},
}
