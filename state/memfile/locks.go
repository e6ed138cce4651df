package memfile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// ReleaseLock frees a held lock and records run, if not nil. ErrLockLost
// when the lock is no longer held by l.Holder (nothing is written).
func (s *Store) ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error {
	return s.update(ctx, "release lock", true, func(x *tx, _ time.Time) error {
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
	var out []state.LockDoc
	err := s.view(ctx, "locks", func(x *tx, _ time.Time) error {
		for _, l := range x.d.locks {
			if user == "" || l.User == user {
				out = append(out, *l)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b state.LockDoc) int { return strings.Compare(a.User, b.User) })
	return out, err
}

// Unlock releases the lock of user held by holder (see state.LockAdmin).
func (s *Store) Unlock(ctx context.Context, user, holder, note string) error {
	return s.update(ctx, "unlock", true, func(x *tx, now time.Time) error {
		cur := x.getLock(state.LockID(user))
		var n *state.LockDoc
		if cur != nil {
			c := *cur
			n = &c
		}
		if err := state.UnlockDoc(n, user, holder, s.by(), note, now); err != nil {
			return fmt.Errorf("memfile: unlock: %w", err)
		}
		x.putLock(n)
		return nil
	})
}
