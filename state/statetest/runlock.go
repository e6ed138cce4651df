package statetest

import (
	"errors"
	"time"

	"github.com/asyncstageout/aso/state"
)

var runLockCases = []testCase{
	{"Lock/RunRecordAndUnlock", func(e *env) {
		s := e.store(Alice, "agent-a")
		la := s
		if ls, err := la.Locks(ctx, ""); err != nil || len(ls) != 0 {
			e.t.Fatalf("Locks of an empty store: %+v, %v", ls, err)
		}
		start := e.clock.Now()
		l, err := s.AcquireLock(ctx, Alice, "host-a:11:x", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := s.AcquireLock(ctx, Bob, "host-b:12:y", time.Minute); err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(30 * time.Second)
		if l, err = s.RenewLock(ctx, l, time.Minute); err != nil {
			e.t.Fatal(err)
		}
		d := e.lockOf(s, Alice)
		if d.Holder != "host-a:11:x" || !d.Since.Equal(start) || !d.Expire.Equal(e.clock.Now().Add(time.Minute)) || d.LastRun != nil {
			e.t.Fatalf("lock after a renewal: %+v", d)
		}
		if ls, err := la.Locks(ctx, ""); err != nil || len(ls) != 2 || ls[0].User != Alice || ls[1].User != Bob {
			e.t.Fatalf("Locks of every user: %+v, %v", ls, err)
		}

		run := state.RunRecord{Holder: "host-a:11:x", Started: state.At(start), Ended: state.At(e.clock.Now()), ExitCode: 1, Error: "FTS unreachable"}
		if err := s.ReleaseLock(ctx, state.Lock{User: Alice, Holder: "someone-else"}, &run); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("ReleaseLock of a lock not held: %v, want ErrLockLost", err)
		}
		if d := e.lockOf(s, Alice); d.Expire.IsZero() || d.LastRun != nil {
			e.t.Fatalf("a release by a non-holder changed the lock: %+v", d)
		}
		if err := s.ReleaseLock(ctx, l, &run); err != nil {
			e.t.Fatal(err)
		}
		d = e.lockOf(s, Alice)
		if !d.Expire.IsZero() || d.LastRun == nil || *d.LastRun != run {
			e.t.Fatalf("lock after ReleaseLock with a run: %+v (last run %+v)", d, d.LastRun)
		}

		e.clock.Advance(time.Minute)
		l2, err := s.AcquireLock(ctx, Alice, "host-b:13:z", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		if l2, err = s.RenewLock(ctx, l2, time.Minute); err != nil {
			e.t.Fatal(err)
		}
		d = e.lockOf(s, Alice)
		if !d.Since.Equal(l2.Since) || !d.Since.Equal(e.clock.Now()) || d.LastRun == nil || *d.LastRun != run {
			e.t.Fatalf("lock taken again: %+v (last run %+v), want a new since and the last run kept", d, d.LastRun)
		}

		la = e.store(Alice, Operator)
		if err := la.Unlock(ctx, Alice, "host-a:11:x", "dead"); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("Unlock naming a former holder: %v, want ErrLockLost", err)
		}
		e.clock.Advance(time.Second)
		if err := la.Unlock(ctx, Alice, "host-b:13:z", "holder died"); err != nil {
			e.t.Fatal(err)
		}
		d = e.lockOf(s, Alice)
		want := state.RunRecord{Holder: "host-b:13:z", Started: state.At(l2.Since), Ended: state.At(e.clock.Now()), ExitCode: -1, Error: "holder died", By: Operator}
		if !d.Expire.IsZero() || d.LastRun == nil || *d.LastRun != want {
			e.t.Fatalf("lock after Unlock: %+v (last run %+v), want last run %+v", d, d.LastRun, want)
		}
		if err := la.Unlock(ctx, Alice, "host-b:13:z", "again"); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("Unlock of a released lock: %v, want ErrLockLost", err)
		}
		if _, err := s.RenewLock(ctx, l2, time.Minute); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("RenewLock after Unlock: %v, want ErrLockLost", err)
		}
		if _, err := s.AcquireLock(ctx, Alice, "host-c:14:w", time.Minute); err != nil {
			e.t.Fatalf("AcquireLock after Unlock: %v", err)
		}
	}},
	{"Lock/TakeOverFromDeadHolder", func(e *env) {
		a, b := e.store(Alice, "host-a:11:5-m-x"), e.store(Alice, "host-a:12:6-m-y")
		start := e.clock.Now()
		la, err := a.AcquireLock(ctx, Alice, "host-a:11:5-m-x", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(10 * time.Second)
		_, err = b.AcquireLock(ctx, Alice, "host-a:12:6-m-y", time.Minute)
		var le *state.LockedError
		if !errors.As(err, &le) || le.Holder != "host-a:11:5-m-x" || !le.Since.Equal(start) {
			e.t.Fatalf("AcquireLock under a live lock: %v, want a *LockedError naming host-a:11:5-m-x since %s", err, start)
		}
		// b found that holder's process gone: it releases the lock naming
		// the holder alone (no revision), recording why, then takes it
		run := state.RunRecord{Holder: le.Holder, Started: le.Since, Ended: state.At(e.clock.Now()), ExitCode: -1, Error: "process 11 is gone", By: "host-a:12:6-m-y"}
		if err := b.ReleaseLock(ctx, state.Lock{User: Alice, Holder: le.Holder, Since: le.Since.Time}, &run); err != nil {
			e.t.Fatalf("ReleaseLock naming the dead holder: %v", err)
		}
		if d := e.lockOf(b, Alice); !d.Expire.IsZero() || d.LastRun == nil || *d.LastRun != run {
			e.t.Fatalf("lock after the release of its dead holder: %+v (last run %+v), want released with %+v", d, d.LastRun, run)
		}
		lb, err := b.AcquireLock(ctx, Alice, "host-a:12:6-m-y", time.Minute)
		if err != nil {
			e.t.Fatalf("AcquireLock after the dead holder's release: %v", err)
		}
		if d := e.lockOf(b, Alice); d.LastRun == nil || *d.LastRun != run || !d.Since.Equal(lb.Since) {
			e.t.Fatalf("lock taken over: %+v (last run %+v), want the takeover kept as the last run", d, d.LastRun)
		}
		// a second agent that judged the same holder dead finds it gone
		if err := a.ReleaseLock(ctx, state.Lock{User: Alice, Holder: le.Holder}, &run); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("ReleaseLock naming a holder taken over: %v, want ErrLockLost", err)
		}
		if _, err := a.RenewLock(ctx, la, time.Minute); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("RenewLock by the holder taken over: %v, want ErrLockLost", err)
		}
		if _, err := b.RenewLock(ctx, lb, time.Minute); err != nil {
			e.t.Fatalf("RenewLock by the new holder: %v", err)
		}
	}},
}
