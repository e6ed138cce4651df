package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls of state.Admin but the run lock's (store_locks.go).

// Enqueue stores valid requests as new transfers, each judged by who owns
// its destination (state.EnqueueOwned; one lookup of memory's index by
// destination for the batch). A request that replaces or supersedes an
// owner records so on it too, in the same write (state.SupersedeOf).
func (s *Store) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	return do(ctx, s.file, "enqueue", true, func(x *tx, now time.Time) ([]state.EnqueueResult, error) {
		dests := make([]state.Destination, len(reqs))
		for i := range reqs {
			dests[i] = state.Destination{Site: reqs[i].Destination, LFN: reqs[i].DestinationLFN}
		}
		refs := x.d.destinationRefs(dests)
		res := make([]state.EnqueueResult, len(reqs))
		for i := range reqs {
			r := &reqs[i]
			res[i] = state.EnqueueResult{ID: r.ID()}
			if err := r.Validate(); err != nil {
				res[i].Status, res[i].Err = state.Rejected, err
				continue
			}
			if x.exists(res[i].ID) {
				res[i].Status = state.AlreadyQueued
				continue
			}
			t, c, err := state.EnqueueOwned(r, refs[dests[i]], now, s.by)
			res[i].Owner = c
			if err != nil {
				res[i].Status, res[i].Err = state.Rejected, err
				continue
			}
			x.put(&t)
			res[i].Status = state.Stored
			if c.Supersedes() {
				x.supersede(c.Owner.ID, &t, now, s.by)
			}
		}
		return res, nil
	})
}

// Get returns one transfer.
func (s *Store) Get(ctx context.Context, id string) (state.Transfer, error) {
	return read(ctx, s, "get", func(x *tx, _ time.Time) (state.Transfer, error) {
		if t := x.get(id); t != nil {
			return clone(t), nil
		}
		return state.Transfer{}, x.missing("get", id)
	})
}

// PFNRefs returns the transfers that recorded each of pfns, from
// memory's index by PFN.
func (s *Store) PFNRefs(ctx context.Context, pfns []string) ([]state.PFNRef, error) {
	return read(ctx, s, "pfn refs", func(x *tx, _ time.Time) ([]state.PFNRef, error) { return x.d.pfnRefs(pfns), nil })
}

// List returns the transfers matching f, oldest created first.
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	return read(ctx, s, "list", func(x *tx, _ time.Time) ([]state.Transfer, error) { return x.d.list(f), nil })
}

// Summary counts transfers and lists those needing attention.
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	return read(ctx, s, "summary", func(x *tx, now time.Time) (state.Summary, error) { return x.d.summary(o.WithDefaults(), now), nil })
}

// Counts counts transfers by state.CountKey and the finished ones by hour
// and minute.
func (s *Store) Counts(ctx context.Context, o state.CountsOptions) (state.Counts, error) {
	return read(ctx, s, "counts", func(x *tx, _ time.Time) (state.Counts, error) { return x.d.counts(o), nil })
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

// RecordVerifications writes verifications into their transfers'
// histories (see state.Admin.RecordVerifications).
func (s *Store) RecordVerifications(ctx context.Context, vs []state.Verification) ([]state.Result, error) {
	ids := itemIDs(vs, func(v *state.Verification) string { return v.ID })
	return s.file.each(ctx, "record verifications", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.VerifyOf(t, vs[i], now, s.by)
	})
}

// Purge removes the terminal transfers o selects (see state.Admin.Purge).
// The journal has no deletion record: under the file lock, the transfers
// are archived, dropped from memory, and the file is rewritten as a
// snapshot without them (one compaction, however many are removed);
// other handles see the file replaced and read it again.
func (s *Store) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	return do(ctx, s.file, "purge", false, func(*tx, time.Time) (int, error) {
		if s.file.opts.ReadOnly {
			return 0, fmt.Errorf("memfile: purge: %s: %w", s.file.path, ErrReadOnly)
		}
		return s.file.purge(o, s.by)
	})
}

// DueUsers returns the users with work due at now, from memory in one
// pass under the file lock (see state.Admin.DueUsers).
func (s *Store) DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error) {
	return read(ctx, s, "due users", func(x *tx, _ time.Time) ([]state.UserDue, error) {
		out := x.d.dueUsers(now, x.deps(s.policy.DependencyWait))
		state.SortDue(out)
		return out, nil
	})
}

// UserWork counts user's transfers by state and says whether its work is
// due at now, from the user's index in memory (see state.Admin.UserWork).
func (s *Store) UserWork(ctx context.Context, user string, now time.Time) (state.UserWork, error) {
	return read(ctx, s, "user work", func(x *tx, _ time.Time) (state.UserWork, error) {
		return x.d.userWork(user, now, x.deps(s.policy.DependencyWait)), nil
	})
}

// read runs fn as one operation that only reads.
func read[T any](ctx context.Context, s *Store, call string, fn func(x *tx, now time.Time) (T, error)) (T, error) {
	return do(ctx, s.file, call, false, fn)
}
