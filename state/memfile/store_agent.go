package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls of state.AgentStore but the run lock's (store_locks.go) and
// List (store_admin.go). A write applies its rule of package state to the
// stored version of each transfer, in one record.

// NewTransfers claims up to r.Limit eligible transfers of the agent's user
// (see state.AgentStore): in queue order, or, with a link cap, in
// state.SpreadOrder within the cap.
func (s *Store) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	return do(ctx, s.file, "new transfers", true, func(x *tx, now time.Time) (state.Claimed, error) {
		c := claimer{x: x, agent: s.agent, policy: s.policy, now: now}
		if r.MaxPerLink > 0 {
			return c.byLink(r), nil
		}
		return c.inOrder(r.Limit), nil
	})
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
	res, err := s.file.each(ctx, "prepare submit", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, of[i].Apply(t, s.agent, now, s.policy.LeaseTTL)
	})
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// RenewLeases extends the lease of held transfers.
func (s *Store) RenewLeases(ctx context.Context, transfers []state.Transfer) ([]state.Result, error) {
	ids := itemIDs(transfers, func(t *state.Transfer) string { return t.ID })
	return s.file.each(ctx, "renew leases", true, ids, func(_ int, t *state.Transfer, now time.Time) (bool, error) {
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
	res, err := s.file.each(ctx, "set transfer id", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.CommitTo(t, s.agent, *commits[i], jobIDs[i], now)
	})
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// AbortTransfers ends the transaction of held transfers without a job.
func (s *Store) AbortTransfers(ctx context.Context, aborts []state.Abort) ([]state.Result, error) {
	ids := itemIDs(aborts, func(a *state.Abort) string { return a.Transfer.ID })
	return s.file.each(ctx, "abort transfers", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return true, state.ApplyAbort(t, s.agent, aborts[i], s.policy, now)
	})
}

// SetTransientState records progress of submitted transfers, without fsync.
// A stale revision is a conflict: transient writes are never re-applied.
func (s *Store) SetTransientState(ctx context.Context, items []state.Transient) ([]state.Result, error) {
	ids := itemIDs(items, func(t *state.Transient) string { return t.Transfer.ID })
	return s.file.each(ctx, "set transient state", false, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
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
	ids := itemIDs(outcomes, func(t *state.Terminal) string { return t.Transfer.ID })
	return s.file.each(ctx, "set terminal state", true, ids, func(i int, t *state.Transfer, now time.Time) (bool, error) {
		return state.ApplyTerminal(t, s.agent, outcomes[i], s.policy, now)
	})
}

// TakeBack expires the claims of l.User's other agents (see
// state.AgentStore.TakeBack), in one record, under the file lock that
// also serialises the run lock, so the check that l is live and the write
// are one step.
func (s *Store) TakeBack(ctx context.Context, l state.Lock) ([]state.Transfer, error) {
	return do(ctx, s.file, "take back claims", true, func(x *tx, now time.Time) ([]state.Transfer, error) {
		return claimer{x: x, agent: s.agent, policy: s.policy, now: now}.takeBack(l)
	})
}

// ActiveJobs lists the FTS jobs of user's submitted transfers, oldest
// last_update first, with their number of submitted transfers.
func (s *Store) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	return read(ctx, s, "active jobs", func(x *tx, _ time.Time) ([]state.JobRef, error) { return x.d.activeJobs(user), nil })
}

// ActiveTransfersOf returns the submitted transfers of user in the given
// jobs, each job's by file ID (state.SortJob), in the order of jobs. A job
// without submitted transfers of user is left out.
func (s *Store) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]state.Job, error) {
	return read(ctx, s, "active transfers of jobs", func(x *tx, _ time.Time) ([]state.Job, error) {
		return x.d.activeTransfersOf(user, jobs), nil
	})
}

// DestinationRefs returns the transfers that name each of dests, from
// memory's index by destination.
func (s *Store) DestinationRefs(ctx context.Context, dests []state.Destination) (map[state.Destination][]state.DestRef, error) {
	return read(ctx, s, "destination refs", func(x *tx, _ time.Time) (map[state.Destination][]state.DestRef, error) {
		return x.d.destinationRefs(dests), nil
	})
}

// itemIDs returns the transfer ID of each item.
func itemIDs[T any](items []T, id func(*T) string) []string {
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = id(&items[i])
	}
	return ids
}
