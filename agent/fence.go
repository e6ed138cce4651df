package agent

import (
	"context"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// fencedStore refuses every write to the state store once the agent may no
// longer own the user's queue (see keeper.mayWrite). Reads pass through.
// The fence is checked before the call and handed to the backend in the
// context (state.WithFence), which checks it again once it holds what
// serialises its writes: an agent paused while it waited there writes
// nothing after losing its lock.
type fencedStore struct {
	Store
	a *Agent
}

func (s fencedStore) fence() error {
	if s.a.keeper == nil { // not running: a dry run writes nothing anyway
		return nil
	}
	return s.a.keeper.mayWrite()
}

func (s fencedStore) NewTransfers(ctx context.Context, n int) ([]state.Transfer, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.NewTransfers(ctx, n)
}

func (s fencedStore) PrepareSubmit(ctx context.Context, ts []state.Transfer, sid string) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.PrepareSubmit(ctx, ts, sid)
}

func (s fencedStore) RenewLeases(ctx context.Context, ts []state.Transfer) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.RenewLeases(ctx, ts)
}

func (s fencedStore) SetTransferID(ctx context.Context, cs []state.Commit, job string) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.SetTransferID(ctx, cs, job)
}

func (s fencedStore) AbortTransfers(ctx context.Context, ab []state.Abort) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.AbortTransfers(ctx, ab)
}

func (s fencedStore) SetTransientState(ctx context.Context, it []state.Transient) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.SetTransientState(ctx, it)
}

func (s fencedStore) SetTerminalState(ctx context.Context, o []state.Terminal) ([]state.Result, error) {
	if err := s.fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, s.fence)
	return s.Store.SetTerminalState(ctx, o)
}

// fencedMulti fences the multi-job writes of a store that has them.
type fencedMulti struct {
	state.MultiSubmitter
	a *Agent
}

func (s fencedMulti) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	if err := (fencedStore{a: s.a}).fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, (fencedStore{a: s.a}).fence)
	return s.MultiSubmitter.PrepareSubmits(ctx, jobs)
}

func (s fencedMulti) SetTransferIDs(ctx context.Context, jobs []state.CommitJob) ([][]state.Result, error) {
	if err := (fencedStore{a: s.a}).fence(); err != nil {
		return nil, err
	}
	ctx = state.WithFence(ctx, (fencedStore{a: s.a}).fence)
	return s.MultiSubmitter.SetTransferIDs(ctx, jobs)
}

// fencedFTS checks the write fence right before every action on FTS (a
// submission, a cancellation): an agent that lost its lock acts on nothing.
// Reads (status, whoami, delegation) pass through.
type fencedFTS struct {
	FTS
	a *Agent
}

func (f fencedFTS) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	if err := (fencedStore{a: f.a}).fence(); err != nil {
		return "", err
	}
	return f.FTS.Submit(ctx, sub)
}

func (f fencedFTS) CancelFiles(ctx context.Context, job string, fileIDs []int64) ([]string, error) {
	if err := (fencedStore{a: f.a}).fence(); err != nil {
		return nil, err
	}
	return f.FTS.CancelFiles(ctx, job, fileIDs)
}

// fencedDeleter checks the write fence right before every gfal-rm: the
// destination copy of a transfer another agent retried since may be good.
type fencedDeleter struct {
	Deleter
	a *Agent
}

func (d fencedDeleter) Delete(ctx context.Context, urls []string) ([]srm.DeleteResult, error) {
	if err := (fencedStore{a: d.a}).fence(); err != nil {
		return nil, err
	}
	return d.Deleter.Delete(ctx, urls)
}
