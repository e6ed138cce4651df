package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// rule changes the stored transfer t (a private copy) for item i and
// reports whether it must be written.
type rule func(i int, t *state.Transfer, now time.Time) (bool, error)

// each applies r to the stored version of every ID, in one record: the
// revision each item carries does not matter, because r checks on the
// stored document that the item is still the caller's (re-read and
// re-apply, as the contract asks of a conflict).
func (s *Store) each(ctx context.Context, call string, durable bool, ids []string, r rule) ([]state.Result, error) {
	res := make([]state.Result, len(ids))
	err := s.update(ctx, call, durable, func(x *tx, now time.Time) error {
		stored, err := x.load(ids)
		if err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		for i, id := range ids {
			res[i] = state.Result{ID: id}
			// an ID given twice sees the write made for its first item
			cur, staged := x.docs[id]
			if !staged {
				cur = stored[i] // read for this item alone: r may change it
			}
			if cur == nil {
				res[i].Err = s.missing(x, call, id)
				continue
			}
			c := cur
			if staged {
				c = edit(cur)
			}
			rev := cur.Rev
			write, err := r(i, c, now)
			switch {
			case err != nil:
				res[i].Err = fmt.Errorf("memfile: %s: %w", call, err)
			case !write:
				res[i] = state.Wrote(id, rev, c)
			default:
				x.put(c)
				res[i] = state.Wrote(id, c.Rev, c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) missing(x *tx, call, id string) error {
	if bad, ok := x.d.invalid[id]; ok {
		return fmt.Errorf("memfile: %s %s: the stored document is invalid (%s) and skipped: %w", call, id, bad.reason, state.ErrNotFound)
	}
	return fmt.Errorf("memfile: %s %s: %w", call, id, state.ErrNotFound)
}

func transferIDs(ts []state.Transfer) []string {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	return ids
}

// NewTransfers claims up to r.Limit eligible transfers of the agent's user
// (see state.AgentStore): in queue order, or, with a link cap, in
// state.SpreadOrder within the cap (claimByLink).
func (s *Store) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	if r.MaxPerLink > 0 {
		return s.claimByLink(ctx, r)
	}
	return s.claimInOrder(ctx, r.Limit)
}

// claimInOrder claims in queue order and reports whether the claim walked
// the queue to its end.
func (s *Store) claimInOrder(ctx context.Context, limit int) (state.Claimed, error) {
	var out state.Claimed
	err := s.update(ctx, "new transfers", true, func(x *tx, now time.Time) error {
		out = state.Claimed{}
		if limit <= 0 {
			return nil
		}
		ui := x.d.userOf(s.agent.User)
		if ui == nil {
			out.End = true
			return nil
		}
		last, more := int32(-1), true
		for more && len(out.Transfers) < limit {
			// the next claimable transfers in claim order, as many as are
			// still wanted, read at once
			var slots []int32
			more = false // until the walk stops before the end of the queue
			visit := func(i int32) bool {
				if i == last {
					return true
				}
				last = i
				if st := x.d.stub(&x.d.metas[i], false); state.Claimable(&st, s.agent.User, now) {
					slots = append(slots, i)
				}
				more = len(slots) >= limit-len(out.Transfers)
				return !more
			}
			if last < 0 {
				ui.queue.Ascend(visit)
			} else {
				ui.queue.AscendGreaterOrEqual(last, visit)
			}
			ts, err := x.readAll(slots)
			if err != nil {
				return fmt.Errorf("memfile: new transfers: %w", err)
			}
			deps := txDeps(x, s.policy.DependencyWait)
			for k := range ts {
				s.tryClaim(x, &ts[k], deps, now, &out)
			}
		}
		out.End = !more
		return nil
	})
	if err != nil {
		return state.Claimed{}, err
	}
	return out, nil
}

// PrepareSubmits writes the sid and endpoint of each job on its held
// transfers and renews their leases, in one record and fsync.
func (s *Store) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	var ids []string
	var of []*state.PrepareJob
	sizes := make([]int, len(jobs))
	for k := range jobs {
		j := &jobs[k]
		sizes[k] = len(j.Transfers)
		for i := range j.Transfers {
			ids = append(ids, j.Transfers[i].ID)
			of = append(of, j)
		}
	}
	res, err := s.each(ctx, "prepare submit", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, of[i].Apply(t, s.agent, now, s.policy.LeaseTTL)
	})
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// RenewLeases extends the lease of held transfers.
func (s *Store) RenewLeases(ctx context.Context, transfers []state.Transfer) ([]state.Result, error) {
	return s.each(ctx, "renew leases", true, transferIDs(transfers), func(_ int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.Renew(t, s.agent, now, s.policy.LeaseTTL)
	})
}

// SetTransferIDs commits each job's held transfers to its FTS job, in one
// record and fsync.
func (s *Store) SetTransferIDs(ctx context.Context, jobs []state.CommitJob) ([][]state.Result, error) {
	var ids, jobIDs []string
	var commits []*state.Commit
	sizes := make([]int, len(jobs))
	for k, j := range jobs {
		sizes[k] = len(j.Commits)
		for i := range j.Commits {
			ids = append(ids, j.Commits[i].Transfer.ID)
			commits = append(commits, &j.Commits[i])
			jobIDs = append(jobIDs, j.JobID)
		}
	}
	res, err := s.each(ctx, "set transfer id", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.CommitTo(t, s.agent, *commits[i], jobIDs[i], now)
	})
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// AbortTransfers ends the transaction of held transfers without a job.
func (s *Store) AbortTransfers(ctx context.Context, aborts []state.Abort) ([]state.Result, error) {
	ids := make([]string, len(aborts))
	for i := range aborts {
		ids[i] = aborts[i].Transfer.ID
	}
	return s.each(ctx, "abort transfers", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.ApplyAbort(t, s.agent, aborts[i], s.policy, now)
	})
}

// SetTransientState records progress of submitted transfers, without fsync.
// A stale revision is a conflict: transient writes are never re-applied.
func (s *Store) SetTransientState(ctx context.Context, items []state.Transient) ([]state.Result, error) {
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].Transfer.ID
	}
	return s.each(ctx, "set transient state", false, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		stale := items[i].Transfer.Rev != "" && items[i].Transfer.Rev != t.Rev
		if err := state.ApplyTransient(t, items[i].Progress, now); err != nil {
			return false, err
		}
		if stale {
			return false, fmt.Errorf("transfer %s: revision %s, stored %s: %w", t.ID, items[i].Transfer.Rev, t.Rev, state.ErrConflict)
		}
		return true, nil
	})
}

// SetTerminalState persists FTS outcomes.
func (s *Store) SetTerminalState(ctx context.Context, outcomes []state.Terminal) ([]state.Result, error) {
	ids := make([]string, len(outcomes))
	for i := range outcomes {
		ids[i] = outcomes[i].Transfer.ID
	}
	return s.each(ctx, "set terminal state", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return state.ApplyTerminal(t, s.agent, outcomes[i], s.policy, now)
	})
}
