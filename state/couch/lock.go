package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// readLock returns the stored lock of user; ok is false if there is none.
func (s *Store) readLock(ctx context.Context, user string) (state.LockDoc, bool, error) {
	docs, err := s.readKeys(ctx, []string{state.LockID(user)})
	if err != nil {
		return state.LockDoc{}, false, err
	}
	raw, ok := docs[state.LockID(user)]
	if !ok {
		return state.LockDoc{}, false, nil
	}
	var d state.LockDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return state.LockDoc{}, false, fmt.Errorf("lock document %s: %v: %w", state.LockID(user), err, state.ErrInvalid)
	}
	return d, true, nil
}

// writeLock writes d revision-checked; it reports a conflict as errConflict.
func (s *Store) writeLock(ctx context.Context, d state.LockDoc) (string, error) {
	d.ID, d.Type = state.LockID(d.User), state.LockDocType
	res, err := s.bulkDocs(ctx, []string{d.ID}, []any{d})
	if err != nil {
		return "", err
	}
	if e := res[0].Error; e != nil {
		if kivik.HTTPStatus(e) == http.StatusConflict {
			return "", errConflict
		}
		return "", fmt.Errorf("lock document %s: %w", d.ID, e)
	}
	return res[0].Rev, nil
}

var errConflict = errors.New("lock document changed")

// lockLoop runs step until it returns something other than errConflict,
// within the conflict bound.
func lockLoop(ctx context.Context, step func() error) error {
	err := backoff.Retry(func() error {
		err := step()
		if err != nil && !errors.Is(err, errConflict) {
			return backoff.Permanent(err)
		}
		return err
	}, newBackOff(ctx, maxConflictRetries))
	if errors.Is(err, errConflict) {
		return fmt.Errorf("%w after %d tries: %w", errConflict, maxConflictRetries+1, state.ErrConflict)
	}
	return err
}

// AcquireLock takes the run lock of user (see state.Locker).
func (s *Store) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error) {
	var l state.Lock
	err := lockLoop(ctx, func() error {
		now := s.now()
		d, found, err := s.readLock(ctx, user)
		if err != nil {
			return err
		}
		if d.Holder != "" && d.Holder != holder && d.Expire.After(now) {
			return &state.LockedError{User: user, Holder: d.Holder, Expire: d.Expire.String()}
		}
		var cur *state.LockDoc
		if found {
			cur = &d
		}
		d.Since = state.TakenSince(cur, holder, now)
		d.User, d.Holder, d.Expire = user, holder, state.At(now.Add(ttl))
		rev, err := s.writeLock(ctx, d)
		if err != nil {
			return err
		}
		l = state.Lock{User: user, Holder: holder, Expire: d.Expire.Time, Rev: rev, Since: d.Since.Time, LastRun: d.LastRun}
		return nil
	})
	if err != nil {
		return state.Lock{}, fmt.Errorf("couch: acquire lock of %s: %w", user, err)
	}
	return l, nil
}

// RenewLock extends a held lock to now+ttl. Any other writer since the lock
// was taken or last renewed means the lock is lost.
func (s *Store) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	rev := l.Rev
	err := lockLoop(ctx, func() error {
		now := s.now()
		exp := state.At(now.Add(ttl))
		r, err := s.writeLock(ctx, state.LockDoc{Rev: rev, User: l.User, Holder: l.Holder, Expire: exp, Since: state.At(l.Since), LastRun: l.LastRun})
		if errors.Is(err, errConflict) {
			// Only a renewal of ours whose answer was lost may have
			// moved the revision; anything else is another writer.
			d, ok, rerr := s.readLock(ctx, l.User)
			if rerr != nil {
				return rerr
			}
			if !ok || d.Holder != l.Holder || !d.Expire.After(now) {
				return fmt.Errorf("lock of %s is held by %q until %s: %w", l.User, d.Holder, d.Expire, state.ErrLockLost)
			}
			rev = d.Rev
			return err
		}
		if err != nil {
			return err
		}
		l.Rev, l.Expire = r, exp.Time
		return nil
	})
	if err != nil {
		return state.Lock{}, fmt.Errorf("couch: renew lock of %s: %w", l.User, err)
	}
	return l, nil
}

// ReleaseLock frees a held lock (expire removed). A lock that is no longer
// ours is left alone.
func (s *Store) ReleaseLock(ctx context.Context, l state.Lock) error {
	rev := l.Rev
	err := lockLoop(ctx, func() error {
		_, err := s.writeLock(ctx, state.LockDoc{Rev: rev, User: l.User, Holder: l.Holder, Since: state.At(l.Since), LastRun: l.LastRun})
		if errors.Is(err, errConflict) {
			d, ok, rerr := s.readLock(ctx, l.User)
			if rerr != nil {
				return rerr
			}
			if !ok || d.Holder != l.Holder || !d.Expire.After(s.now()) {
				return nil // not ours any more
			}
			rev = d.Rev
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("couch: release lock of %s: %w", l.User, err)
	}
	return nil
}
