package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// keeper holds the run lock: it renews the lock and the leases of the held
// transfers every third of their TTL, by the agent's clock, and is the
// write fence. The loop calls tick before every pass and a background
// goroutine calls it every second (more often for short TTLs), so long
// phases are covered too. If a renewal keeps failing until the lock or a
// lease would expire, or the lock or a lease is found lost, it calls lost:
// the agent must stop all work at once.
type keeper struct {
	cfg   Config
	log   *logrus.Entry
	store Store   // the agent's, decorated
	book  *ledger // whose leases are renewed

	mu         sync.Mutex
	lost       func(error)
	lock       state.Lock
	next       time.Time // when to renew next
	leaseUntil time.Time // earliest expiry of the held leases

	// holding is set once the lock is taken; expire is the lock's expiry
	// as last written (unix nanoseconds), and dead is set once ownership
	// is lost; all three are read without mu by the write fence.
	holding atomic.Bool
	expire  atomic.Int64
	dead    atomic.Bool

	// tookOver names the holder whose lock this run took over, and why
	// (for the run's record).
	tookOver string
}

func newKeeper(cfg Config, log *logrus.Entry) *keeper {
	return &keeper{cfg: cfg, log: log}
}

// hold starts keeping lock, just taken; lost is called once if ownership
// is lost.
func (k *keeper) hold(lock state.Lock, lost func(error)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lock, k.lost, k.next = lock, lost, k.cfg.Now().Add(k.renewPeriod())
	k.expire.Store(lock.Expire.UnixNano())
	k.holding.Store(true)
}

// fenceMargin is kept between the last moment the agent writes and the
// lock's expiry, against clock skew between the hosts of two agents.
func (k *keeper) fenceMargin() time.Duration { return k.cfg.LockTTL / 10 }

// mayWrite is the write fence: the agent may write to the state store, act
// on FTS or delete only while the run lock it holds has not expired by its
// own clock (less a margin). An agent paused past its lock's expiry
// (SIGSTOP, a long GC, a suspended VM) finds out here before its first
// write, and stops. Before the lock is taken nothing is fenced: the agent
// writes nothing then.
func (k *keeper) mayWrite() error {
	if k.dead.Load() {
		return ErrStopped
	}
	if !k.holding.Load() {
		return nil
	}
	exp := time.Unix(0, k.expire.Load())
	if !k.cfg.Now().Before(exp.Add(-k.fenceMargin())) {
		err := fmt.Errorf("run lock of %s expired at %s before this write: %w", k.cfg.User, exp.UTC().Format(time.RFC3339), state.ErrLockLost)
		k.die(err)
		return err
	}
	return nil
}

// hooks refuse every write to the state store once the agent may no
// longer own the user's queue. The fence is checked before the call and
// handed to the backend in the context (state.WithFence), which checks it
// again once it holds what serialises its writes: an agent paused while it
// waited there writes nothing after losing its lock.
func (k *keeper) hooks() state.Hooks {
	return state.Hooks{Before: func(ctx context.Context, op state.Op) (context.Context, error) {
		if !op.Writes() {
			return ctx, nil
		}
		if err := k.mayWrite(); err != nil {
			return nil, err
		}
		return state.WithFence(ctx, k.mayWrite), nil
	}}
}

func (k *keeper) renewPeriod() time.Duration {
	return min(k.cfg.LockTTL, k.cfg.Policy.LeaseTTL) / 3
}

// run ticks until ctx is done or ownership is lost: every second, or twice
// per renewal period when that is shorter (a short --lock-ttl), so that a
// long phase never outlives the lock.
func (k *keeper) run(ctx context.Context) {
	t := time.NewTicker(max(min(time.Second, k.renewPeriod()/2), 10*time.Millisecond))
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
	now := k.cfg.Now()
	if k.dead.Load() {
		return false
	}
	if now.Before(k.next) {
		return true
	}
	retry := min(k.renewPeriod(), 10*time.Second)
	k.next = now.Add(k.renewPeriod())
	if err := k.renewLock(ctx); err != nil {
		if ctx.Err() != nil {
			// the keeper is being stopped (the run ends): a renewal cut
			// short by that is no loss of ownership
			return true
		}
		if errors.Is(err, state.ErrLockLost) || !now.Before(k.lock.Expire.Add(-retry)) {
			return k.die(fmt.Errorf("renew run lock of %s: %w", k.cfg.User, errOr(err, state.ErrLockLost)))
		}
		k.log.WithError(err).Warn("renewing the run lock failed; retrying")
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
		k.log.WithError(err).Warn("renewing leases failed; retrying")
		k.next = now.Add(retry)
	}
	return true
}

func (k *keeper) die(err error) bool {
	if k.dead.CompareAndSwap(false, true) && k.lost != nil {
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
	ctx, cancel := context.WithTimeout(ctx, k.cfg.PhaseTimeout)
	defer cancel()
	l, err := k.store.RenewLock(ctx, k.lock, k.cfg.LockTTL)
	if err == nil {
		k.lock = l
		k.expire.Store(l.Expire.UnixNano())
	}
	return err
}

// renewLeases renews every held transfer and returns the new earliest
// expiry, as the store wrote it (nothing held: a full lease TTL from now).
func (k *keeper) renewLeases(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, k.cfg.PhaseTimeout)
	defer cancel()
	until, lost, err := k.book.renew(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if len(lost) > 0 {
		return time.Time{}, fmt.Errorf("lease of %d transfers lost (first %s: %v): %w", len(lost), lost[0].ID, lost[0].Err, state.ErrLeaseLost)
	}
	if until.IsZero() {
		until = k.cfg.Now().Add(k.cfg.Policy.LeaseTTL)
	}
	return until, nil
}

func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// acquire takes the user's run lock. A live lock whose holder is known
// dead (Config.HolderGone) is taken over at once: released in the
// holder's name with a record of who took it over and why, then taken.
// Another agent that took it meanwhile wins: the lock is then refused
// (state.ErrLocked) as usual.
func (k *keeper) acquire(ctx context.Context) (state.Lock, error) {
	lock, err := k.store.AcquireLock(ctx, k.cfg.User, k.cfg.Owner, k.cfg.LockTTL)
	var le *state.LockedError
	if err == nil || k.cfg.HolderGone == nil || !errors.As(err, &le) {
		return lock, err
	}
	why, gone := k.cfg.HolderGone(le.Holder)
	if !gone {
		return lock, err
	}
	dead := state.Lock{User: k.cfg.User, Holder: le.Holder, Since: le.Since.Time}
	note := fmt.Sprintf("the run lock was taken over by %s before it expired: %s", k.cfg.Owner, why)
	run := state.RunRecord{Holder: le.Holder, Started: le.Since, Ended: state.At(k.cfg.Now()), ExitCode: -1, Error: note, By: k.cfg.Owner}
	if rerr := k.store.ReleaseLock(ctx, dead, &run); rerr != nil && !errors.Is(rerr, state.ErrLockLost) {
		return lock, fmt.Errorf("take over the run lock from %s (%s): %w", le.Holder, why, rerr)
	}
	if lock, err = k.store.AcquireLock(ctx, k.cfg.User, k.cfg.Owner, k.cfg.LockTTL); err != nil {
		return lock, err
	}
	k.tookOver = fmt.Sprintf("%s (%s)", le.Holder, why)
	k.log.WithField("holder", le.Holder).WithField("reason", why).Warn("run lock taken over from an agent that is no longer running")
	return lock, nil
}

// maxRecordedError bounds the error text recorded with a run.
const maxRecordedError = 500

// release releases the run lock l and records the run in the same
// write: its start (started), its end (now) and the exit code runErr maps to, so
// that `aso status` shows how the user's last run ended.
func (k *keeper) release(ctx context.Context, l state.Lock, runErr error, started time.Time) error {
	code := 0
	switch {
	case k.cfg.ExitCode != nil:
		code = k.cfg.ExitCode(runErr)
	case runErr != nil:
		code = 1
	}
	run := state.RunRecord{Holder: l.Holder, Started: state.At(started), Ended: state.At(k.cfg.Now()), ExitCode: code, TookOver: k.tookOver}
	if runErr != nil {
		run.Error = runErr.Error()
		if len(run.Error) > maxRecordedError {
			run.Error = run.Error[:maxRecordedError] + "..."
		}
	}
	return k.store.ReleaseLock(ctx, l, &run)
}
