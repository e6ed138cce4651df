package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncstageout/aso/state"
)

// keeper renews the run lock and the leases every third of their TTL, by
// the agent's clock: the loop calls tick before every pass and a background
// goroutine calls it every second (more often for short TTLs), so long
// phases are covered too. If a renewal keeps failing until the lock or a
// lease would expire, or the lock or a lease is found lost, it calls lost:
// the agent must stop all work at once.
type keeper struct {
	a    *Agent
	lost func(error)

	mu         sync.Mutex
	lock       state.Lock
	next       time.Time // when to renew next
	leaseUntil time.Time // earliest expiry of the held leases

	// expire is the lock's expiry as last written (unix nanoseconds), and
	// dead is set once ownership is lost; both are read without mu by the
	// write fence.
	expire atomic.Int64
	dead   atomic.Bool
}

func newKeeper(a *Agent, lock state.Lock, lost func(error)) *keeper {
	k := &keeper{a: a, lost: lost, lock: lock, next: a.cfg.Now().Add(a.renewPeriod())}
	k.expire.Store(lock.Expire.UnixNano())
	return k
}

// fenceMargin is kept between the last moment the agent writes and the
// lock's expiry, against clock skew between the hosts of two agents.
func (a *Agent) fenceMargin() time.Duration { return a.cfg.LockTTL / 10 }

// mayWrite is the write fence: the agent may write to the state store only
// while the run lock it holds has not expired by its own clock (less a
// margin). An agent paused past its lock's expiry (SIGSTOP, a long GC, a
// suspended VM) finds out here before its first write, and stops.
func (k *keeper) mayWrite() error {
	if k.dead.Load() {
		return ErrStopped
	}
	exp := time.Unix(0, k.expire.Load())
	if !k.a.cfg.Now().Before(exp.Add(-k.a.fenceMargin())) {
		err := fmt.Errorf("run lock of %s expired at %s before this write: %w", k.a.cfg.User, exp.UTC().Format(time.RFC3339), state.ErrLockLost)
		k.die(err)
		return err
	}
	return nil
}

func (a *Agent) renewPeriod() time.Duration {
	return min(a.cfg.LockTTL, a.cfg.Policy.LeaseTTL) / 3
}

// run ticks until ctx is done or ownership is lost: every second, or twice
// per renewal period when that is shorter (a short --lock-ttl), so that a
// long phase never outlives the lock.
func (k *keeper) run(ctx context.Context) {
	t := time.NewTicker(max(min(time.Second, k.a.renewPeriod()/2), 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !k.tick(ctx) {
				return
			}
		}
	}
}

// tick renews if due; it reports false once ownership is lost.
func (k *keeper) tick(ctx context.Context) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.a
	now := a.cfg.Now()
	if k.dead.Load() {
		return false
	}
	if now.Before(k.next) {
		return true
	}
	retry := min(a.renewPeriod(), 10*time.Second)
	k.next = now.Add(a.renewPeriod())
	if err := k.renewLock(ctx); err != nil {
		if ctx.Err() != nil {
			// the keeper is being stopped (the run ends): a renewal cut
			// short by that is no loss of ownership
			return true
		}
		if errors.Is(err, state.ErrLockLost) || !now.Before(k.lock.Expire.Add(-retry)) {
			return k.die(fmt.Errorf("renew run lock of %s: %w", a.cfg.User, errOr(err, state.ErrLockLost)))
		}
		a.log.WithError(err).Warn("renewing the run lock failed; retrying")
		k.next = now.Add(retry)
	}
	exp, err := k.renewLeases(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return true // stopped, as above
	case err == nil:
		k.leaseUntil = exp
	case errors.Is(err, state.ErrLeaseLost):
		return k.die(err)
	case !k.leaseUntil.IsZero() && !now.Before(k.leaseUntil.Add(-retry)):
		return k.die(fmt.Errorf("renew leases: %w (%w)", err, state.ErrLeaseLost))
	default:
		a.log.WithError(err).Warn("renewing leases failed; retrying")
		k.next = now.Add(retry)
	}
	return true
}

func (k *keeper) die(err error) bool {
	if k.dead.CompareAndSwap(false, true) {
		k.lost(err)
	}
	return false
}

// current returns the lock as last renewed.
func (k *keeper) current() state.Lock {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lock
}

func (k *keeper) renewLock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.a.cfg.PhaseTimeout)
	defer cancel()
	l, err := k.a.store.RenewLock(ctx, k.lock, k.a.cfg.LockTTL)
	if err == nil {
		k.lock = l
		k.expire.Store(l.Expire.UnixNano())
	}
	return err
}

// renewLeases renews every held transfer and returns the new earliest
// expiry, as the store wrote it (nothing held: a full lease TTL from now).
func (k *keeper) renewLeases(ctx context.Context) (time.Time, error) {
	a := k.a
	ctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	defer cancel()
	until, lost, err := a.book.renew(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if len(lost) > 0 {
		return time.Time{}, fmt.Errorf("lease of %d transfers lost (first %s: %v): %w", len(lost), lost[0].ID, lost[0].Err, state.ErrLeaseLost)
	}
	if until.IsZero() {
		until = a.cfg.Now().Add(a.cfg.Policy.LeaseTTL)
	}
	return until, nil
}

func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}
