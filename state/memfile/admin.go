package memfile

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
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
	err := s.view(ctx, "get", func(x *tx, _ time.Time) error {
		ts, err := x.load([]string{id})
		if err != nil {
			return fmt.Errorf("memfile: get %s: %w", id, err)
		}
		if ts[0] == nil {
			return s.missing(x, "get", id)
		}
		out = *ts[0]
		return nil
	})
	return out, err
}

// List returns the transfers matching f, oldest created first. The index
// selects and orders the candidates; the filters the index does not hold
// (LFN, FTS job) are checked on the documents, read back a page at a time.
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	var out []state.Transfer
	err := s.view(ctx, "list", func(x *tx, _ time.Time) error {
		d := x.d
		cheap := f
		cheap.LFN, cheap.FTSJob, cheap.ErrorClass = "", "", "" // not in the index: checked below
		withID := len(f.IDs) > 0 || f.IDPrefix != "" || f.After != nil
		var found []int32
		for _, i := range candidates(d, f.User, f.States, f.IDs) {
			if st := d.stub(&d.metas[i], withID); cheap.Matches(&st) {
				found = append(found, i)
			}
		}
		slices.SortFunc(found, func(a, b int32) int { return d.listCmp(&d.metas[a], &d.metas[b]) })
		var err error
		if out, err = x.readMatching(found, f); err != nil {
			return fmt.Errorf("memfile: list: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readMatching reads the transfers of slots, in order, that f matches, up
// to f.Limit. Without a filter on the documents it reads only those it
// returns; otherwise it reads listPage slots at a time.
func (x *tx) readMatching(slots []int32, f state.Filter) ([]state.Transfer, error) {
	if f.LFN == "" && f.FTSJob == "" && f.ErrorClass == "" {
		if f.Limit > 0 && len(slots) > f.Limit {
			slots = slots[:f.Limit]
		}
		return x.readAll(slots)
	}
	out := []state.Transfer{}
	for len(slots) > 0 && (f.Limit <= 0 || len(out) < f.Limit) {
		n := min(len(slots), listPage)
		ts, err := x.readAll(slots[:n])
		if err != nil {
			return nil, err
		}
		slots = slots[n:]
		for i := range ts {
			if f.Matches(&ts[i]) && (f.Limit <= 0 || len(out) < f.Limit) {
				out = append(out, ts[i])
			}
		}
	}
	return out, nil
}

// listPage is how many transfers List reads back at once when it filters
// on their documents.
const listPage = 1000

// listCmp orders transfers as state.ListLess does: oldest created first,
// then ID.
func (d *db) listCmp(a, b *meta) int {
	return cmp.Or(cmp.Compare(a.created, b.created), bytes.Compare(a.id[:], b.id[:]))
}

// waitCmp orders waiting transfers: oldest last_update, then ID.
func (d *db) waitCmp(a, b *meta) int {
	return cmp.Or(cmp.Compare(a.lastUpdate, b.lastUpdate), bytes.Compare(a.id[:], b.id[:]))
}

// candidates narrows the search through the indexes: the slots of the
// given IDs, else of the transfers of user (every user if "") in states
// (every state if none).
func candidates(d *db, user string, states []state.State, ids []string) []int32 {
	var out []int32
	if len(ids) > 0 {
		for _, id := range ids {
			if i, ok := d.lookup(id); ok {
				out = append(out, i)
			}
		}
		return out
	}
	u, known := d.strs.ids[user]
	if user != "" && !known {
		return nil
	}
	var want [8]bool
	for _, st := range states {
		want[stateCode(st)] = true
	}
	for i := range d.metas {
		m := &d.metas[i]
		if m.state != 0 && (user == "" || m.user == u) && (len(states) == 0 || want[m.state]) {
			out = append(out, int32(i))
		}
	}
	return out
}

// Summary counts transfers and lists those needing attention.
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	o = o.WithDefaults()
	var sum state.Summary
	err := s.view(ctx, "summary", func(x *tx, now time.Time) error {
		d := x.d
		sum = state.Summary{ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
			ByErrorClass: map[string]int{},
			Stale:        []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{}}
		byLink := map[[2]uint32]*[8]int{}
		byUser := map[uint32]*[8]int{}
		oldest := int32(-1)
		var stale, stuck []int32
		staleBefore := now.Add(-o.StaleAfter)
		for _, i := range candidates(d, o.User, nil, nil) {
			m := &d.metas[i]
			sum.Total++
			countIn(byLink, [2]uint32{m.src, m.dst}, m.state)
			countIn(byUser, m.user, m.state)
			switch m.State() {
			case state.StateFailed:
				sum.ByErrorClass[d.strs.strs[m.class]]++
			case state.StateNew:
				if oldest < 0 || d.waitCmp(m, &d.metas[oldest]) < 0 {
					oldest = i
				}
			case state.StateSubmitted:
				if fromNanos(m.lastUpdate).Before(staleBefore) {
					stale = append(stale, i)
				}
			case state.StateAcquired:
				if !fromNanos(m.leaseExpires).After(now) {
					stuck = append(stuck, i)
				}
			}
		}
		for k, n := range byLink {
			link := d.strs.strs[k[0]] + "->" + d.strs.strs[k[1]]
			sum.ByLink[link] = addCounts(sum.ByLink[link], n)
			addCounts(sum.ByState, n)
		}
		for u, n := range byUser {
			sum.ByUser[d.strs.strs[u]] = addCounts(nil, n)
		}
		var err error
		if oldest >= 0 {
			ts, rerr := x.readAll([]int32{oldest})
			if err = rerr; err == nil {
				sum.OldestWaiting = &ts[0]
			}
		}
		if err == nil {
			sum.Stale, err = x.readOldest(stale, o.MaxListed)
		}
		if err == nil {
			sum.StuckAcquired, err = x.readOldest(stuck, o.MaxListed)
		}
		if err != nil {
			return fmt.Errorf("memfile: summary: %w", err)
		}
		for id, bad := range d.invalid {
			sum.Invalid = append(sum.Invalid, state.InvalidDoc{ID: id, Reason: bad.reason})
		}
		sort.Slice(sum.Invalid, func(i, j int) bool { return sum.Invalid[i].ID < sum.Invalid[j].ID })
		return nil
	})
	return sum, err
}

// Counts counts transfers by state.CountKey and the finished ones by hour
// and minute, from the index (see countsOf).
func (s *Store) Counts(ctx context.Context, o state.CountsOptions) (state.Counts, error) {
	var out state.Counts
	err := s.view(ctx, "counts", func(x *tx, _ time.Time) error {
		var err error
		out, err = countsOf(x, o)
		return err
	})
	return out, err
}

func countIn[K comparable](m map[K]*[8]int, k K, st uint8) {
	n := m[k]
	if n == nil {
		n = new([8]int)
		m[k] = n
	}
	n[st]++
}

// addCounts adds counts by state code to m (made if nil) and returns it.
func addCounts(m map[state.State]int, n *[8]int) map[state.State]int {
	if m == nil {
		m = map[state.State]int{}
	}
	for c, k := range n {
		if k > 0 {
			m[state.States[c-1]] += k
		}
	}
	return m
}

// readOldest reads the first n of slots, oldest last_update first.
func (x *tx) readOldest(slots []int32, n int) ([]state.Transfer, error) {
	d := x.d
	slices.SortFunc(slots, func(a, b int32) int { return d.waitCmp(&d.metas[a], &d.metas[b]) })
	ts, err := x.readAll(slots[:min(n, len(slots))])
	if err != nil {
		return nil, err
	}
	return ts, nil
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
			return &state.LockedError{User: user, Holder: cur.Holder, Expire: cur.Expire.String(), Since: cur.Since}
		}
		l := &state.LockDoc{ID: id, Type: state.LockDocType, User: user, Holder: holder, Expire: state.At(now.Add(ttl))}
		l.Since = state.TakenSince(cur, holder, now)
		if cur != nil {
			l.Rev, l.LastRun = cur.Rev, cur.LastRun
		}
		x.putLock(l)
		out = state.Lock{User: user, Holder: holder, Expire: l.Expire.Time, Rev: l.Rev, Since: l.Since.Time, LastRun: l.LastRun}
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
		out = state.Lock{User: l.User, Holder: l.Holder, Expire: n.Expire.Time, Rev: n.Rev, Since: n.Since.Time, LastRun: n.LastRun}
		return nil
	})
	if err != nil {
		return state.Lock{}, err
	}
	return out, nil
}
