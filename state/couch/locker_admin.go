package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Unlock releases the lock of user held by holder (see state.Admin): read,
// change, revision-checked write. A write answered 202 (fewer replicas
// than the quorum) is kept, not undone as a lock taken so would be: the
// lock is read again, and written again until a quorum read shows it
// released with this unlock's record.
func (k *locker) Unlock(ctx context.Context, user, holder, note string) error {
	now, by := k.now(), k.by
	var wrote *state.RunRecord // the record of this unlock's last write answered 202
	err := lockLoop(ctx, func() error {
		d, others, ok, err := k.read(ctx, user)
		if err != nil {
			return err
		}
		d = holderLeaf(d, others, holder)
		if wrote != nil && ok && d.Expire.IsZero() && d.LastRun != nil && *d.LastRun == *wrote {
			return nil // the write answered 202 has reached a quorum
		}
		cur := &d
		if !ok {
			cur = nil
		}
		if err := state.UnlockDoc(cur, user, holder, by, note, now); err != nil {
			return err
		}
		_, err = k.writeKeep202(ctx, d)
		if errors.Is(err, errNoQuorum) {
			wrote = d.LastRun
			return errConflict // read and, if need be, write again
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("couch: unlock %s: %w", user, err)
	}
	return nil
}

// holderLeaf returns the leaf of a conflicted lock document that holder
// holds, when CouchDB's winner d is not it: a leaf an agent released (it
// deletes nothing) may win over the one the holder renews.
func holderLeaf(d state.LockDoc, others []state.LockDoc, holder string) state.LockDoc {
	if d.Holder == holder && !d.Expire.IsZero() {
		return d
	}
	for _, o := range others {
		if o.Holder == holder && !o.Expire.IsZero() {
			return o
		}
	}
	return d
}

// Locks returns the stored run locks of user ("" every user): one read of
// the lock documents' range of _all_docs.
func (k *locker) Locks(ctx context.Context, user string) ([]state.LockDoc, error) {
	start, end := state.LockID(""), state.LockID("")+"\ufff0"
	if user != "" {
		start, end = state.LockID(user), state.LockID(user)
	}
	raws, err := k.db.readRange(ctx, start, end)
	var out []state.LockDoc
	for _, raw := range raws {
		var d state.LockDoc
		if json.Unmarshal(raw, &d) == nil && d.Type == state.LockDocType && d.User != "" {
			out = append(out, d)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("couch: read locks of %s: %w", k.db.url, err)
	}
	return out, nil
}
