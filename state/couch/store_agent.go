package couch

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// heldItems builds one item per transfer of ts, whose rule is f(i, t): a
// state rule that checks the agent's hold itself and always writes.
func heldItems(ts []state.Transfer, f func(i int, t *state.Transfer) error) []item {
	items := make([]item, len(ts))
	for i := range ts {
		items[i] = item{id: ts[i].ID, t: &ts[i], rule: func(t *state.Transfer) (bool, error) {
			return true, f(i, t)
		}}
	}
	return items
}

// PrepareSubmits writes the sid and endpoint of each job on its claimed
// transfers and renews their leases (one _bulk_docs).
func (s *Store) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	a, now, ttl := s.agent, s.now(), s.policy.LeaseTTL
	var ts []state.Transfer
	var of []*state.PrepareJob
	sizes := make([]int, len(jobs))
	for k := range jobs {
		sizes[k] = len(jobs[k].Transfers)
		ts = append(ts, jobs[k].Transfers...)
		for range jobs[k].Transfers {
			of = append(of, &jobs[k])
		}
	}
	items := heldItems(ts, func(i int, t *state.Transfer) error { return of[i].Apply(t, a, now, ttl) })
	res, err := wrap("prepare submit")(s.w.mutate(ctx, items, reapply))
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// RenewLeases extends the leases of claimed transfers (one _bulk_docs).
func (s *Store) RenewLeases(ctx context.Context, transfers []state.Transfer) ([]state.Result, error) {
	a, now, ttl := s.agent, s.now(), s.policy.LeaseTTL
	items := heldItems(transfers, func(_ int, t *state.Transfer) error { return state.Renew(t, a, now, ttl) })
	return wrap("renew leases")(s.w.mutate(ctx, items, reapply))
}

// SetTransferIDs commits each job's claimed transfers to its FTS job (one
// _bulk_docs).
func (s *Store) SetTransferIDs(ctx context.Context, jobs []state.CommitJob) ([][]state.Result, error) {
	a, now := s.agent, s.now()
	var ts []state.Transfer
	var commits []*state.Commit
	var jobIDs []string
	sizes := make([]int, len(jobs))
	for k, j := range jobs {
		sizes[k] = len(j.Commits)
		for i := range j.Commits {
			ts = append(ts, j.Commits[i].Transfer)
			commits = append(commits, &j.Commits[i])
			jobIDs = append(jobIDs, j.JobID)
		}
	}
	items := heldItems(ts, func(i int, t *state.Transfer) error { return state.CommitTo(t, a, *commits[i], jobIDs[i], now) })
	res, err := wrap("set transfer id")(s.w.mutate(ctx, items, reapply))
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// AbortTransfers ends transactions without a job (one _bulk_docs).
func (s *Store) AbortTransfers(ctx context.Context, aborts []state.Abort) ([]state.Result, error) {
	a, now, p := s.agent, s.now(), s.policy
	ts := make([]state.Transfer, len(aborts))
	for i := range aborts {
		ts[i] = aborts[i].Transfer
	}
	items := heldItems(ts, func(i int, t *state.Transfer) error { return state.ApplyAbort(t, a, aborts[i], p, now) })
	return wrap("abort transfers")(s.w.mutate(ctx, items, reapply))
}

// SetTransientState records progress (one _bulk_docs; a conflict is
// reported, never retried).
func (s *Store) SetTransientState(ctx context.Context, transients []state.Transient) ([]state.Result, error) {
	now := s.now()
	items := make([]item, len(transients))
	for i := range transients {
		pr := transients[i].Progress
		items[i] = item{id: transients[i].Transfer.ID, t: &transients[i].Transfer, rule: func(t *state.Transfer) (bool, error) {
			return true, state.ApplyTransient(t, pr, now)
		}}
	}
	return wrap("set transient state")(s.w.mutate(ctx, items, report))
}

// SetTerminalState persists FTS outcomes (one _bulk_docs, plus re-reads on
// conflicts).
func (s *Store) SetTerminalState(ctx context.Context, outcomes []state.Terminal) ([]state.Result, error) {
	a, now, p := s.agent, s.now(), s.policy
	items := make([]item, len(outcomes))
	for i := range outcomes {
		o := outcomes[i]
		items[i] = item{id: o.Transfer.ID, t: &outcomes[i].Transfer, rule: func(t *state.Transfer) (bool, error) {
			return state.ApplyTerminal(t, a, o, p, now)
		}}
	}
	return wrap("set terminal state")(s.w.mutate(ctx, items, reapply))
}

// wrap adds the call's name to a whole-call error.
func wrap(call string) func([]state.Result, error) ([]state.Result, error) {
	return func(r []state.Result, err error) ([]state.Result, error) {
		if err != nil {
			return nil, fmt.Errorf("couch: %s: %w", call, err)
		}
		return r, nil
	}
}
