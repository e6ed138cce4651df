package couch

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The run lock's calls of state.AgentStore and state.Admin (locker).

// AcquireLock takes the run lock of user (see state.Locker).
func (s *Store) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error) {
	return s.locks.acquire(ctx, user, holder, ttl)
}

// RenewLock extends a held lock to now+ttl. Any other writer since the lock
// was taken or last renewed means the lock is lost.
func (s *Store) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	return s.locks.renew(ctx, l, ttl)
}

// ReleaseLock frees a held lock and records run, if not nil, in the same
// write. ErrLockLost when the lock is no longer held by l.Holder.
func (s *Store) ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error {
	return s.locks.release(ctx, l, run)
}

// Unlock releases the lock of user held by holder (see state.Admin).
func (s *Store) Unlock(ctx context.Context, user, holder, note string) error {
	return s.locks.unlock(ctx, user, holder, note)
}

// Locks returns the stored run locks of user ("" every user).
func (s *Store) Locks(ctx context.Context, user string) ([]state.LockDoc, error) {
	return s.locks.list(ctx, user)
}
