package couch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

var (
	_ state.RunRecorder = (*Store)(nil)
	_ state.LockAdmin   = (*Store)(nil)
)

// ReleaseLockRecord frees a held lock and records run in the lock document
// (see state.RunRecorder): read, change, revision-checked write.
func (s *Store) ReleaseLockRecord(ctx context.Context, l state.Lock, run state.RunRecord) error {
	err := s.changeLock(ctx, l.User, func(d *state.LockDoc) (bool, error) {
		return state.ReleaseDoc(d, l, run), nil
	})
	if err != nil {
		return fmt.Errorf("couch: release lock of %s: %w", l.User, err)
	}
	return nil
}

// Unlock releases the lock of user held by holder (see state.LockAdmin).
func (s *Store) Unlock(ctx context.Context, user, holder, note string) error {
	now := s.now()
	err := s.changeLock(ctx, user, func(d *state.LockDoc) (bool, error) {
		return true, state.UnlockDoc(d, user, holder, note, now)
	})
	if err != nil {
		return fmt.Errorf("couch: unlock %s: %w", user, err)
	}
	return nil
}

// changeLock applies f to the stored lock of user (nil if none) and writes
// it when f says so, re-reading on a conflict.
func (s *Store) changeLock(ctx context.Context, user string, f func(*state.LockDoc) (bool, error)) error {
	return lockLoop(ctx, func() error {
		d, _, ok, err := s.readLock(ctx, user)
		if err != nil {
			return err
		}
		cur := &d
		if !ok {
			cur = nil
		}
		write, err := f(cur)
		if err != nil || !write {
			return err
		}
		_, err = s.writeLock(ctx, d)
		return err
	})
}

// Locks returns the stored run locks of user ("" every user): one read of
// the lock documents' range of _all_docs.
func (s *Store) Locks(ctx context.Context, user string) ([]state.LockDoc, error) {
	start, end := state.LockID(""), state.LockID("")+"\ufff0"
	if user != "" {
		start, end = state.LockID(user), state.LockID(user)
	}
	var out []state.LockDoc
	err := retryHTTP(ctx, func() error {
		out = out[:0]
		rs := s.db.AllDocs(ctx, kivik.Params(map[string]any{"include_docs": true, "startkey": start, "endkey": end}))
		defer rs.Close()
		for rs.Next() {
			var raw json.RawMessage
			if err := rs.ScanDoc(&raw); err != nil {
				return err
			}
			var d state.LockDoc
			if json.Unmarshal(raw, &d) == nil && d.Type == state.LockDocType && d.User != "" {
				out = append(out, d)
			}
		}
		return rs.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("couch: read locks of %s: %w", s.url, err)
	}
	return out, nil
}
