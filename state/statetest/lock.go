package statetest

import (
	"errors"
	"time"

	"github.com/asyncstageout/aso/state"
)

var lockCases = []testCase{
	{"Lock/Exclusive", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		l, err := a.AcquireLock(ctx, Alice, "agent-a", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		if l.User != Alice || l.Holder != "agent-a" || !l.Expire.Equal(e.clock.Now().Add(time.Minute)) {
			e.t.Fatalf("lock %+v", l)
		}
		_, err = b.AcquireLock(ctx, Alice, "agent-b", time.Minute)
		var le *state.LockedError
		if !errors.As(err, &le) || !errors.Is(err, state.ErrLocked) || le.Holder != "agent-a" || le.User != Alice {
			e.t.Fatalf("second AcquireLock: %v, want a *LockedError naming agent-a", err)
		}
		if _, err := b.AcquireLock(ctx, Bob, "agent-b", time.Minute); err != nil {
			e.t.Fatalf("lock of another user: %v", err)
		}
		if _, err := b.RenewLock(ctx, state.Lock{User: Alice, Holder: "agent-b", Expire: l.Expire}, time.Minute); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("RenewLock by a non-holder: %v, want ErrLockLost", err)
		}
		e.clock.Advance(30 * time.Second)
		l, err = a.RenewLock(ctx, l, time.Minute)
		if err != nil || !l.Expire.Equal(e.clock.Now().Add(time.Minute)) {
			e.t.Fatalf("RenewLock: %+v, %v", l, err)
		}
		e.clock.Advance(59 * time.Second)
		if _, err := b.AcquireLock(ctx, Alice, "agent-b", time.Minute); !errors.Is(err, state.ErrLocked) {
			e.t.Fatalf("AcquireLock under a renewed lock: %v", err)
		}
		if err := a.ReleaseLock(ctx, l, nil); err != nil {
			e.t.Fatal(err)
		}
		lb, err := b.AcquireLock(ctx, Alice, "agent-b", time.Minute)
		if err != nil {
			e.t.Fatalf("AcquireLock after release: %v", err)
		}
		if _, err := a.RenewLock(ctx, l, time.Minute); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("RenewLock of a released lock: %v, want ErrLockLost", err)
		}
		// releasing a lock no longer held must not free the new holder's,
		// and says that it was lost
		if err := a.ReleaseLock(ctx, l, nil); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("ReleaseLock of a lock taken by another: %v, want ErrLockLost", err)
		}
		if _, err := a.AcquireLock(ctx, Alice, "agent-a", time.Minute); !errors.Is(err, state.ErrLocked) {
			e.t.Fatalf("a stale release freed the lock of agent-b: %v", err)
		}
		if _, err := b.RenewLock(ctx, lb, time.Minute); err != nil {
			e.t.Fatal(err)
		}
	}},
	{"Lock/Expires", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		l, err := a.AcquireLock(ctx, Alice, "agent-a", time.Minute)
		if err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(time.Minute + time.Second)
		if _, err := b.AcquireLock(ctx, Alice, "agent-b", time.Minute); err != nil {
			e.t.Fatalf("AcquireLock after expiry: %v", err)
		}
		if _, err := a.RenewLock(ctx, l, time.Minute); !errors.Is(err, state.ErrLockLost) {
			e.t.Fatalf("RenewLock after take-over: %v, want ErrLockLost", err)
		}
	}},
}
