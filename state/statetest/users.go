package statetest

import (
	"time"

	"github.com/asyncstageout/aso/state"
)

// The users of the DueUsers cases beyond Alice and Bob.
const (
	Carol = "carol"
	Dave  = "dave"
)

// usersCases prove state.UserLister; a store that does not implement it
// skips them.
var usersCases = []testCase{
	{"DueUsers/KindsAndOrder", func(e *env) {
		s, b, c := e.store(Alice, "agent-a"), e.store(Bob, "agent-b"), e.store(Carol, "agent-c")
		l := s
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Dave, 1))
		e.clock.Advance(time.Minute)
		e.enqueue(s, Req(Bob, 1), Req(Carol, 1))
		e.submit(b, 1, "job-bob")
		// carol's only transfer is back in new, in its cool-off
		ts := e.claim(c, 1)
		res, err := c.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "no route"}})
		e.ok("AbortTransfers", res, err, 1)
		// dave's only transfer is done: nothing to do for dave
		d := e.store(Dave, "agent-d")
		done := e.submit(d, 1, "job-dave")
		e.terminal(d, state.Terminal{Transfer: done[0], Outcome: state.OutcomeDone, FTSJob: "job-dave"})

		e.checkDue(l, []state.UserDue{
			{User: Alice, Since: Start, Queued: 2},
			{User: Bob, Since: Start.Add(time.Minute), Active: 1},
		})
		retryAt := e.get(c, ts[0].ID).RetryAfter.Time
		e.clock.Set(retryAt)
		e.checkDue(l, []state.UserDue{
			{User: Alice, Since: Start, Queued: 2},
			{User: Bob, Since: Start.Add(time.Minute), Active: 1},
			{User: Carol, Since: retryAt, Queued: 1},
		})
	}},
	{"DueUsers/LiveAndExpiredLease", func(e *env) {
		s := e.store(Alice, "agent-a")
		l := s
		e.enqueue(s, Req(Alice, 1))
		claimed := e.claim(s, 1)
		e.checkDue(l, nil) // held by a live agent
		expires := e.get(s, claimed[0].ID).LeaseExpires.Time
		e.clock.Set(expires)
		e.checkDue(l, []state.UserDue{{User: Alice, Since: expires, Queued: 1}})
	}},
	{"DueUsers/RunLock", func(e *env) {
		s := e.store(Alice, "agent-a")
		l := s
		e.enqueue(s, Req(Alice, 1))
		lock, err := s.AcquireLock(ctx, Alice, "agent-a", time.Minute)
		if err != nil {
			e.t.Fatalf("AcquireLock: %v", err)
		}
		e.checkDue(l, []state.UserDue{{User: Alice, Since: Start, Queued: 1, LockedUntil: Start.Add(time.Minute)}})
		if err := s.ReleaseLock(ctx, lock, nil); err != nil {
			e.t.Fatalf("ReleaseLock: %v", err)
		}
		e.checkDue(l, []state.UserDue{{User: Alice, Since: Start, Queued: 1}})
		if _, err := s.AcquireLock(ctx, Alice, "agent-b", time.Minute); err != nil {
			e.t.Fatalf("AcquireLock: %v", err)
		}
		e.clock.Advance(time.Minute) // expired: free for anyone
		e.checkDue(l, []state.UserDue{{User: Alice, Since: Start, Queued: 1}})
	}},
	{"DueUsers/Dependencies", func(e *env) {
		s := e.store(Alice, "agent-a")
		l := s
		w := Req(Alice, 1)
		w.DependsOn = []string{ReqID(Alice, 99)} // never enqueued: waits
		e.enqueue(s, w)
		got, err := l.DueUsers(ctx, e.clock.Now())
		if err != nil {
			e.t.Fatalf("DueUsers: %v", err)
		}
		// a backend that checks dependencies leaves alice out; one that
		// cannot says so
		if len(got) > 1 || len(got) == 1 && (got[0].User != Alice || !got[0].DepsOnly) {
			e.t.Fatalf("DueUsers with only a waiting dependant: %+v, want none or alice DepsOnly", got)
		}
		// once alice has work without dependencies, she is due for it
		e.enqueue(s, Req(Alice, 2))
		e.checkDue(l, []state.UserDue{{User: Alice, Since: Start, Queued: 2}})
	}},
	{"DueUsers/DependencyDone", func(e *env) {
		s := e.store(Bob, "agent-b")
		l := s
		dep := e.enqueue(s, Req(Bob, 1))[0]
		d := Req(Bob, 2)
		d.DependsOn = []string{dep}
		e.enqueue(s, d)
		done := e.submit(s, 1, "job-1")
		if done[0].ID != dep {
			e.t.Fatalf("claimed %s, want the dependency %s", done[0].ID, dep)
		}
		e.terminal(s, state.Terminal{Transfer: done[0], Outcome: state.OutcomeDone, FTSJob: "job-1"})
		got, err := l.DueUsers(ctx, e.clock.Now())
		if err != nil {
			e.t.Fatalf("DueUsers: %v", err)
		}
		// the dependant can run now: bob is due (DepsOnly where the
		// backend could not check)
		if len(got) != 1 || got[0].User != Bob || got[0].Queued != 1 || !got[0].Since.Equal(Start) {
			e.t.Fatalf("DueUsers with the dependency done: %+v, want bob with 1 queued since %s", got, Start)
		}
	}},
	{"UserWork/CountsAndDue", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Bob, 1))
		done := e.submit(s, 1, "job-1")
		e.terminal(s, state.Terminal{Transfer: done[0], Outcome: state.OutcomeDone, FTSJob: "job-1"})
		e.submit(s, 1, "job-2")
		w := e.userWork(s, Alice)
		if want := map[state.State]int{state.StateNew: 1, state.StateSubmitted: 1, state.StateDone: 1}; !sameCounts(w.ByState, want) {
			e.t.Fatalf("UserWork of alice: %v, want %v", w.ByState, want)
		}
		if w.Due == nil || w.Due.Queued != 1 || w.Due.Active != 1 || w.Idle() || w.Transfers() != 3 {
			e.t.Fatalf("UserWork of alice: due %+v, idle %v, want 1 queued and 1 active, not idle", w.Due, w.Idle())
		}
		// carol never had a transfer: nothing at all, whoever else has
		if w := e.userWork(s, Carol); w.Transfers() != 0 || w.Due != nil || !w.Idle() || !w.LockedUntil.IsZero() {
			e.t.Fatalf("UserWork of a user without transfers: %+v", w)
		}
		if _, err := s.AcquireLock(ctx, Carol, "agent-c", time.Minute); err != nil {
			e.t.Fatalf("AcquireLock: %v", err)
		}
		if w := e.userWork(s, Carol); w.Transfers() != 0 || !w.LockedUntil.Equal(Start.Add(time.Minute)) {
			e.t.Fatalf("UserWork of a user whose lock is held: %+v, want it locked until %s", w, Start.Add(time.Minute))
		}
	}},
	{"UserWork/IdleWhileWaiting", func(e *env) {
		s := e.store(Bob, "agent-b")
		t := e.coolingOff(s, Bob, 1)
		// back in new, in its cool-off: nothing due, nothing active
		w := e.userWork(s, Bob)
		if w.ByState[state.StateNew] != 1 || w.Due != nil || !w.Idle() {
			e.t.Fatalf("UserWork of a user whose only transfer cools off: %+v", w)
		}
		e.clock.Set(e.get(s, t.ID).RetryAfter.Time)
		if w := e.userWork(s, Bob); w.Due == nil || w.Idle() {
			e.t.Fatalf("UserWork once the cool-off has passed: %+v, want due", w)
		}
	}},
}
