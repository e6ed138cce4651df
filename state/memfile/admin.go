package memfile

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/asyncstageout/aso/state"
)

// by names the writer of admin changes in history.
func (s *Store) by() string {
	if s.agent.Owner != "" {
		return s.agent.Owner
	}
	return "aso"
}

// Enqueue stores valid requests as new transfers.
func (s *Store) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	res := make([]state.EnqueueResult, len(reqs))
	err := s.update(ctx, "enqueue", true, func(x *tx, now time.Time) error {
		for i := range reqs {
			r := &reqs[i]
			res[i] = state.EnqueueResult{ID: r.ID()}
			switch err := r.Validate(); {
			case err != nil:
				res[i].Status, res[i].Err = state.Rejected, err
			case x.exists(res[i].ID):
				res[i].Status = state.AlreadyQueued
			default:
				t := state.NewTransfer(*r, now, s.by())
				x.put(&t)
				res[i].Status = state.Stored
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Get returns one transfer.
func (s *Store) Get(ctx context.Context, id string) (state.Transfer, error) {
	var out state.Transfer
	err := s.update(ctx, "get", false, func(x *tx, _ time.Time) error {
		t := x.get(id)
		if t == nil {
			return s.missing(x, "get", id)
		}
		out = *clone(t)
		return nil
	})
	return out, err
}

// List returns the transfers matching f, oldest created first.
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	var out []state.Transfer
	err := s.view(ctx, "list", func(d *db, _ time.Time) error {
		out = nil
		var found []*state.Transfer
		for _, t := range candidates(d, f.User, f.States, f.IDs) {
			if f.Matches(t) {
				found = append(found, t)
			}
		}
		sort.Slice(found, func(i, j int) bool { return state.ListLess(found[i], found[j]) })
		if f.Limit > 0 && len(found) > f.Limit {
			found = found[:f.Limit]
		}
		out = make([]state.Transfer, len(found))
		for i, t := range found {
			out[i] = *clone(t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// candidates narrows the search through the indexes.
func candidates(d *db, user string, states []state.State, ids []string) []*state.Transfer {
	var out []*state.Transfer
	switch {
	case len(ids) > 0:
		for _, id := range ids {
			if t := d.docs[id]; t != nil {
				out = append(out, t)
			}
		}
	case user != "" || len(states) > 0:
		if len(states) == 0 {
			states = state.States
		}
		for u, ui := range d.users {
			if user != "" && u != user {
				continue
			}
			for _, st := range states {
				for _, t := range ui.byState[st] {
					out = append(out, t)
				}
			}
		}
	default:
		for _, t := range d.docs {
			out = append(out, t)
		}
	}
	return out
}

// Summary counts transfers and lists those needing attention.
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	o = o.WithDefaults()
	var sum state.Summary
	err := s.view(ctx, "summary", func(d *db, now time.Time) error {
		sum = state.Summary{ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
			Stale: []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{}}
		var oldest *state.Transfer
		for _, t := range candidates(d, o.User, nil, nil) {
			sum.Total++
			sum.ByState[t.State]++
			count(sum.ByLink, t.Link(), t.State)
			count(sum.ByUser, t.User, t.State)
			switch {
			case t.State == state.StateNew && (oldest == nil || waitsLonger(t, oldest)):
				oldest = t
			case t.State == state.StateSubmitted && t.LastUpdate.Before(now.Add(-o.StaleAfter)):
				sum.Stale = append(sum.Stale, *clone(t))
			case t.State == state.StateAcquired && !t.LeaseExpires.After(now):
				sum.StuckAcquired = append(sum.StuckAcquired, *clone(t))
			}
		}
		if oldest != nil {
			sum.OldestWaiting = clone(oldest)
		}
		sum.Stale = oldestFirst(sum.Stale, o.MaxListed)
		sum.StuckAcquired = oldestFirst(sum.StuckAcquired, o.MaxListed)
		for id, bad := range d.invalid {
			sum.Invalid = append(sum.Invalid, state.InvalidDoc{ID: id, Reason: bad.reason})
		}
		sort.Slice(sum.Invalid, func(i, j int) bool { return sum.Invalid[i].ID < sum.Invalid[j].ID })
		return nil
	})
	return sum, err
}

// waitsLonger orders waiting transfers: oldest last_update, then ID.
func waitsLonger(a, b *state.Transfer) bool {
	if !a.LastUpdate.Equal(b.LastUpdate.Time) {
		return a.LastUpdate.Before(b.LastUpdate.Time)
	}
	return a.ID < b.ID
}

func count(m map[string]map[state.State]int, k string, st state.State) {
	if m[k] == nil {
		m[k] = map[state.State]int{}
	}
	m[k][st]++
}

func oldestFirst(ts []state.Transfer, n int) []state.Transfer {
	sort.Slice(ts, func(i, j int) bool { return waitsLonger(&ts[i], &ts[j]) })
	if len(ts) > n {
		ts = ts[:n]
	}
	return ts
}

// RequestKill kills new transfers and flags active ones.
func (s *Store) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.each(ctx, "request kill", true, ids, func(_ int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.RequestKillOf(t, now, s.by())
	})
}

// Retry returns terminal transfers to new.
func (s *Store) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.each(ctx, "retry", true, ids, func(_ int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.RetryOf(t, now, s.by())
	})
}

// AcquireLock takes the run lock of user for holder until now+ttl.
func (s *Store) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error) {
	var out state.Lock
	err := s.update(ctx, "acquire lock", true, func(x *tx, now time.Time) error {
		id := state.LockID(user)
		cur := x.getLock(id)
		if cur != nil && cur.Holder != holder && cur.Expire.After(now) {
			return &state.LockedError{User: user, Holder: cur.Holder, Expire: cur.Expire.String()}
		}
		l := &state.LockDoc{ID: id, Type: state.LockDocType, User: user, Holder: holder, Expire: state.At(now.Add(ttl))}
		if cur != nil {
			l.Rev = cur.Rev
		}
		x.putLock(l)
		out = state.Lock{User: user, Holder: holder, Expire: l.Expire.Time, Rev: l.Rev}
		return nil
	})
	if err != nil {
		return state.Lock{}, err
	}
	return out, nil
}

// RenewLock extends a held lock to now+ttl.
func (s *Store) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	var out state.Lock
	err := s.update(ctx, "renew lock", true, func(x *tx, now time.Time) error {
		cur := x.getLock(state.LockID(l.User))
		if cur == nil || cur.Holder != l.Holder || cur.Expire.IsZero() {
			holder := "nobody"
			if cur != nil && !cur.Expire.IsZero() {
				holder = cur.Holder
			}
			return fmt.Errorf("memfile: renew lock of %s for %s: now held by %s: %w", l.User, l.Holder, holder, state.ErrLockLost)
		}
		n := *cur
		n.Expire = state.At(now.Add(ttl))
		x.putLock(&n)
		out = state.Lock{User: l.User, Holder: l.Holder, Expire: n.Expire.Time, Rev: n.Rev}
		return nil
	})
	if err != nil {
		return state.Lock{}, err
	}
	return out, nil
}

// ReleaseLock frees a held lock; a lock held by another holder is left alone.
func (s *Store) ReleaseLock(ctx context.Context, l state.Lock) error {
	return s.update(ctx, "release lock", true, func(x *tx, _ time.Time) error {
		cur := x.getLock(state.LockID(l.User))
		if cur == nil || cur.Holder != l.Holder || cur.Expire.IsZero() {
			return nil
		}
		n := *cur
		n.Expire = state.Time{}
		x.putLock(&n)
		return nil
	})
}
