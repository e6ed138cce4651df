package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls of state.Admin but the run lock's (store_locks.go).

// Enqueue stores valid requests as new transfers.
func (s *Store) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	return do(ctx, s.file, "enqueue", true, func(x *tx, now time.Time) ([]state.EnqueueResult, error) {
		res := make([]state.EnqueueResult, len(reqs))
		for i := range reqs {
			r := &reqs[i]
			res[i] = state.EnqueueResult{ID: r.ID()}
			switch err := r.Validate(); {
			case err != nil:
				res[i].Status, res[i].Err = state.Rejected, err
			case x.exists(res[i].ID):
				res[i].Status = state.AlreadyQueued
			default:
				t := state.NewTransfer(*r, now, s.by)
				x.put(&t)
				res[i].Status = state.Stored
			}
		}
		return res, nil
	})
}

// Get returns one transfer.
func (s *Store) Get(ctx context.Context, id string) (state.Transfer, error) {
	return do(ctx, s.file, "get", false, func(x *tx, _ time.Time) (state.Transfer, error) {
		ts, err := x.load([]string{id}, false)
		if err != nil {
			return state.Transfer{}, fmt.Errorf("memfile: get %s: %w", id, err)
		}
		if ts[0] == nil {
			return state.Transfer{}, x.missing("get", id)
		}
		return *ts[0], nil
	})
}

// List returns the transfers matching f, oldest created first, reading
// back only those it returns, or a page at a time those it filters on
// fields the index does not hold (query.list).
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	return do(ctx, s.file, "list", false, func(x *tx, _ time.Time) ([]state.Transfer, error) {
		out, err := newQuery(x).list(f)
		if err != nil {
			return nil, fmt.Errorf("memfile: list: %w", err)
		}
		return out, nil
	})
}

// Summary counts transfers and lists those needing attention.
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	o = o.WithDefaults()
	return do(ctx, s.file, "summary", false, func(x *tx, now time.Time) (state.Summary, error) {
		sum, err := newQuery(x).summary(o, now)
		if err != nil {
			return state.Summary{}, fmt.Errorf("memfile: summary: %w", err)
		}
		return sum, nil
	})
}

// Counts counts transfers by state.CountKey and the finished ones by hour
// and minute, from the index (query.counts).
func (s *Store) Counts(ctx context.Context, o state.CountsOptions) (state.Counts, error) {
	return do(ctx, s.file, "counts", false, func(x *tx, _ time.Time) (state.Counts, error) {
		return newQuery(x).counts(o)
	})
}

// RequestKill kills new transfers and flags active ones.
func (s *Store) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.file.each(ctx, "request kill", true, ids, func(_ int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.RequestKillOf(t, now, s.by)
	})
}

// Retry returns terminal transfers to new.
func (s *Store) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.file.each(ctx, "retry", true, ids, func(_ int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.RetryOf(t, now, s.by)
	})
}

// Purge removes the terminal transfers o selects (see state.Admin.Purge).
// The journal has no deletion record: under the file lock, the transfers
// are archived, dropped from memory, and the file is rewritten as a
// snapshot without them (one compaction, however many are removed);
// other handles see the file replaced and read it again.
func (s *Store) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	var n int
	err := s.file.locked(ctx, "purge", func(j *journal) error {
		var err error
		n, err = j.purge(o, s.by, s.file.now)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DueUsers returns the users with work due at now, from the index in one
// pass under the file lock (see state.Admin.DueUsers). The dependencies of
// a user's first due transfers are checked on the transfers read back
// from the file.
func (s *Store) DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error) {
	out, err := do(ctx, s.file, "due users", false, func(x *tx, _ time.Time) ([]state.UserDue, error) {
		out, err := newQuery(x).dueUsers(now, s.policy.DependencyWait)
		if err != nil {
			return nil, fmt.Errorf("memfile: due users: %w", err)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	state.SortDue(out)
	return out, nil
}
