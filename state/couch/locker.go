package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// locker is the run locks: one document per user, taken, renewed and
// released by revision-checked writes that count only on a write quorum
// (201), read with all their leaves (a live lock of another holder on any
// leaf counts as held).
type locker struct {
	db  *db
	now func() time.Time
	by  string // who an unlock's record names
}

// read returns the stored lock of user (CouchDB's winning revision)
// and the other leaf revisions of a conflicted lock document; ok is false
// if there is none. It reads from a quorum of replicas (r) where the
// server says how many make one.
func (k *locker) read(ctx context.Context, user string) (state.LockDoc, []state.LockDoc, bool, error) {
	id := state.LockID(user)
	raw, found, err := k.db.readConflicted(ctx, id)
	if err != nil {
		return state.LockDoc{}, nil, false, fmt.Errorf("read lock document %s from %s: %w", id, k.db.url, err)
	}
	if !found {
		return state.LockDoc{}, nil, false, nil
	}
	var d state.LockDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return state.LockDoc{}, nil, false, fmt.Errorf("lock document %s: %v: %w", id, err, state.ErrInvalid)
	}
	var refs []kivik.BulkGetReference
	for _, r := range conflictsOf(raw) {
		refs = append(refs, kivik.BulkGetReference{ID: id, Rev: r})
	}
	revs, err := k.db.readRevs(ctx, refs)
	if err != nil {
		return state.LockDoc{}, nil, false, err
	}
	var others []state.LockDoc
	for _, o := range revs {
		var od state.LockDoc
		if json.Unmarshal(o, &od) == nil {
			others = append(others, od)
		}
	}
	return d, others, true, nil
}

// heldByOther returns the first of leaves held by someone other than
// holder and not expired at now.
func heldByOther(leaves []state.LockDoc, holder string, now time.Time) (state.LockDoc, bool) {
	for _, d := range leaves {
		if d.Holder != "" && d.Holder != holder && d.Expire.After(now) {
			return d, true
		}
	}
	return state.LockDoc{}, false
}

// write writes d revision-checked; it reports a conflict as
// errConflict, and a write acknowledged by fewer replicas than the write
// quorum (202) as errNoQuorum after releasing the revision it wrote: two
// such writes of one revision may both be answered 202 (or one 202 and one
// 201), while two quorum writes of one revision cannot both succeed.
func (k *locker) write(ctx context.Context, d state.LockDoc) (string, error) {
	rev, err := k.writeKeep202(ctx, d)
	if errors.Is(err, errNoQuorum) {
		d.Rev = rev
		k.releaseLeaves(ctx, []state.LockDoc{d})
	}
	return rev, err
}

// writeKeep202 is write that leaves a revision answered 202 in
// place, returning it with errNoQuorum.
func (k *locker) writeKeep202(ctx context.Context, d state.LockDoc) (string, error) {
	d.ID, d.Type = state.LockID(d.User), state.LockDocType
	res, accepted, err := k.db.bulkDocs(ctx, []string{d.ID}, []any{d})
	if err != nil {
		return "", err
	}
	if e := res[0].Err; e != nil {
		if errors.Is(e, state.ErrConflict) {
			return "", errConflict
		}
		return "", fmt.Errorf("lock document %s: %w", d.ID, e)
	}
	if accepted[0] {
		return res[0].Rev, errNoQuorum
	}
	return res[0].Rev, nil
}

// releaseLeaves writes a release (no expire) on each of the given leaf
// revisions of a lock document, best effort. The agent deletes nothing (its
// role may not), so such leaves stay, as released locks that no reader
// counts as held, until aso resolve-conflicts deletes them; a leaf left
// live counts as held until it expires.
func (k *locker) releaseLeaves(ctx context.Context, leaves []state.LockDoc) {
	if len(leaves) == 0 {
		return
	}
	ids := make([]string, len(leaves))
	docs := make([]any, len(leaves))
	for i, d := range leaves {
		d.ID, d.Type, d.Expire = state.LockID(d.User), state.LockDocType, state.Time{}
		ids[i], docs[i] = d.ID, d
	}
	_, _, _ = k.db.bulkDocs(ctx, ids, docs)
}

var (
	errConflict = errors.New("lock document changed")
	errNoQuorum = errors.New("the lock write reached fewer replicas than the write quorum (202 Accepted)")
)

// lockLoop runs step until it returns something other than errConflict,
// within the conflict bound.
func lockLoop(ctx context.Context, step func() error) error {
	err := retries(ctx, conflictTries, func() error {
		err := step()
		if err != nil && !errors.Is(err, errConflict) {
			return backoff.Permanent(err)
		}
		return err
	})
	if errors.Is(err, errConflict) {
		return fmt.Errorf("%w after %d tries: %w", errConflict, conflictTries, state.ErrConflict)
	}
	return err
}

// AcquireLock takes the run lock of user (see state.Locker).
func (k *locker) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error) {
	var l state.Lock
	err := lockLoop(ctx, func() error {
		now := k.now()
		d, others, found, err := k.read(ctx, user)
		if err != nil {
			return err
		}
		if o, held := heldByOther(append([]state.LockDoc{d}, others...), holder, now); held {
			return &state.LockedError{User: user, Holder: o.Holder, Expire: o.Expire.String(), Since: o.Since}
		}
		// leaves of earlier races: those of ours still live are released,
		// the others (expired or released) are no longer weighed
		var ours []state.LockDoc
		for _, o := range others {
			if o.Holder == holder && o.Expire.After(now) {
				ours = append(ours, o)
			}
		}
		k.releaseLeaves(ctx, ours)
		var cur *state.LockDoc
		if found {
			cur = &d
		}
		d.Since = state.TakenSince(cur, holder, now)
		d.User, d.Holder, d.Expire = user, holder, state.At(now.Add(ttl))
		rev, err := k.write(ctx, d)
		if errors.Is(err, errNoQuorum) {
			// another agent may hold it through other replicas
			return &state.LockedError{User: user, Holder: "unknown (" + err.Error() + ")", Expire: d.Expire.String()}
		}
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
func (k *locker) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	rev := l.Rev
	err := lockLoop(ctx, func() error {
		now := k.now()
		exp := state.At(now.Add(ttl))
		r, err := k.write(ctx, state.LockDoc{Rev: rev, User: l.User, Holder: l.Holder, Expire: exp, Since: state.At(l.Since), LastRun: l.LastRun})
		if errors.Is(err, errNoQuorum) {
			return fmt.Errorf("lock of %s: %w: %w", l.User, err, state.ErrLockLost)
		}
		if errors.Is(err, errConflict) {
			// Only a renewal of ours whose answer was lost may have
			// moved the revision; anything else is another writer.
			d, others, ok, rerr := k.read(ctx, l.User)
			if rerr != nil {
				return rerr
			}
			leaves := append([]state.LockDoc{d}, others...)
			if o, held := heldByOther(leaves, l.Holder, now); held {
				return fmt.Errorf("lock of %s is also held by %q until %s: %w", l.User, o.Holder, o.Expire, state.ErrLockLost)
			}
			i := slices.IndexFunc(leaves, func(o state.LockDoc) bool { return o.Holder == l.Holder && o.Expire.After(now) })
			if !ok || i < 0 {
				return fmt.Errorf("lock of %s is held by %q until %s: %w", l.User, d.Holder, d.Expire, state.ErrLockLost)
			}
			rev = leaves[i].Rev
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

// ReleaseLock frees a held lock (expire removed) and records run, if not
// nil, in the same write: one revision-checked write with the revision of
// l; on a conflict the lock is read again. ErrLockLost when the lock is no
// longer held by l.Holder.
func (k *locker) ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error {
	rev, last := l.Rev, l.LastRun
	if run != nil {
		last = run
	}
	err := lockLoop(ctx, func() error {
		_, err := k.write(ctx, state.LockDoc{Rev: rev, User: l.User, Holder: l.Holder, Since: state.At(l.Since), LastRun: last})
		if errors.Is(err, errNoQuorum) {
			return nil // the lock expires by itself
		}
		if errors.Is(err, errConflict) {
			d, others, ok, rerr := k.read(ctx, l.User)
			if rerr != nil {
				return rerr
			}
			leaves := append([]state.LockDoc{d}, others...)
			i := slices.IndexFunc(leaves, func(o state.LockDoc) bool { return o.Holder == l.Holder && !o.Expire.IsZero() })
			if !ok || i < 0 {
				return releasedBy(l, d, ok)
			}
			rev = leaves[i].Rev
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("couch: release lock of %s: %w", l.User, err)
	}
	return nil
}

// releasedBy is the error of a release that found the lock d (ok: stored)
// no longer held by l.Holder.
func releasedBy(l state.Lock, d state.LockDoc, ok bool) error {
	switch {
	case !ok:
		return fmt.Errorf("run lock of %s is gone: %w", l.User, state.ErrLockLost)
	case d.Holder != l.Holder && !d.Expire.IsZero():
		return fmt.Errorf("run lock of %s is held by %s until %s: %w", l.User, d.Holder, d.Expire, state.ErrLockLost)
	case d.Holder != l.Holder:
		return fmt.Errorf("run lock of %s was taken by %s and released since: %w", l.User, d.Holder, state.ErrLockLost)
	}
	return fmt.Errorf("run lock of %s was released by someone else: %w", l.User, state.ErrLockLost)
}
