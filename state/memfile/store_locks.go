package memfile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls of the run lock, of the agent and of the commands. A lock is
// a document of its own, written in the same records as transfers, under
// the same file lock.

// AcquireLock takes the run lock of user for holder until now+ttl.
func (s *Store) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error) {
	return do(ctx, s.file, "acquire lock", true, func(x *tx, now time.Time) (state.Lock, error) {
		id := state.LockID(user)
		cur := x.getLock(id)
		if cur != nil && cur.Holder != holder && cur.Expire.After(now) {
			return state.Lock{}, &state.LockedError{User: user, Holder: cur.Holder, Expire: cur.Expire.String(), Since: cur.Since}
		}
		l := &state.LockDoc{ID: id, Type: state.LockDocType, User: user, Holder: holder, Expire: state.At(now.Add(ttl))}
		l.Since = state.TakenSince(cur, holder, now)
		if cur != nil {
			l.Rev, l.LastRun = cur.Rev, cur.LastRun
		}
		x.putLock(l)
		return state.Lock{User: user, Holder: holder, Expire: l.Expire.Time, Rev: l.Rev, Since: l.Since.Time, LastRun: l.LastRun}, nil
	})
}

// RenewLock extends a held lock to now+ttl.
func (s *Store) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	return do(ctx, s.file, "renew lock", true, func(x *tx, now time.Time) (state.Lock, error) {
		cur := x.getLock(state.LockID(l.User))
		if err := state.NotHeldBy(cur, l.User, l.Holder); err != nil {
			return state.Lock{}, fmt.Errorf("memfile: renew lock: %w", err)
		}
		n := *cur
		n.Expire = state.At(now.Add(ttl))
		x.putLock(&n)
		return state.Lock{User: l.User, Holder: l.Holder, Expire: n.Expire.Time, Rev: n.Rev, Since: n.Since.Time, LastRun: n.LastRun}, nil
	})
}

// ReleaseLock frees a held lock and records run, if not nil. ErrLockLost
// when the lock is no longer held by l.Holder (nothing is written).
func (s *Store) ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error {
	return s.file.update(ctx, "release lock", true, func(x *tx, _ time.Time) error {
		cur := x.getLock(state.LockID(l.User))
		if cur == nil {
			return fmt.Errorf("memfile: release lock of %s: it is gone: %w", l.User, state.ErrLockLost)
		}
		n := *cur
		if !state.ReleaseDoc(&n, l, run) {
			return fmt.Errorf("memfile: release lock: %w", state.NotHeldBy(cur, l.User, l.Holder))
		}
		x.putLock(&n)
		return nil
	})
}

// Locks returns the stored run locks of user ("" every user).
func (s *Store) Locks(ctx context.Context, user string) ([]state.LockDoc, error) {
	return read(ctx, s, "locks", func(x *tx, _ time.Time) ([]state.LockDoc, error) {
		var out []state.LockDoc
		for _, l := range x.d.locks {
			if user == "" || l.User == user {
				out = append(out, *l)
			}
		}
		slices.SortFunc(out, func(a, b state.LockDoc) int { return strings.Compare(a.User, b.User) })
		return out, nil
	})
}

// Unlock releases the lock of user held by holder (see state.Admin.Unlock).
func (s *Store) Unlock(ctx context.Context, user, holder, note string) error {
	return s.file.update(ctx, "unlock", true, func(x *tx, now time.Time) error {
		// a copy of the stored lock; none is a lock held by nobody
		n := *cmp.Or(x.getLock(state.LockID(user)), &state.LockDoc{})
		if err := state.UnlockDoc(&n, user, holder, s.by, note, now); err != nil {
			return fmt.Errorf("memfile: unlock: %w", err)
		}
		x.putLock(&n)
		return nil
	})
}
