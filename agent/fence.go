package agent

import (
	"context"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// wrap decorates the agent's dependencies: the state store with the
// metrics' timing and then the write fence (one state.Wrap each), FTS and
// the deleter with theirs, and finds the store's optional abilities,
// decorated alike, through state.As.
func (a *Agent) wrap(store Store, f FTS, d Deleter) {
	a.store = state.Wrap(state.Wrap(store, a.metrics.storeHooks()), a.fenceHooks())
	a.fts, a.deleter = fencedFTS{instrumentedFTS{f, a.metrics}, a}, fencedDeleter{d, a}
	// a store without the multi-job ability gets state's adapter over the
	// decorated store: one write per job, each fenced and timed
	multi, ok := state.As[state.MultiSubmitter](a.store)
	if !ok {
		multi = state.MultiOf(a.store)
	}
	a.book = newLedger(a.store, multi)
	a.pager, _ = state.As[state.ActivePager](a.store)
	a.linkClaimer, _ = state.As[state.LinkClaimer](a.store)
	a.ender, _ = state.As[state.QueueEnder](a.store)
	a.recoverer, _ = state.As[state.Recoverer](a.store)
	a.recorder, _ = state.As[state.RunRecorder](a.store)
	a.confirm, _ = state.As[state.Confirmer](a.store)
}

// fence is the write fence: nil while the agent may write to the state
// store and act on FTS (see keeper.mayWrite).
func (a *Agent) fence() error {
	if a.keeper == nil { // not running: a dry run writes nothing anyway
		return nil
	}
	return a.keeper.mayWrite()
}

// fencedOps are the state-store calls that write on the agent's behalf.
// The lock calls are not among them: they are how ownership is kept and
// given up. Reads pass through.
var fencedOps = map[string]bool{
	"NewTransfers": true, "NewTransfersByLink": true, "PrepareSubmit": true, "PrepareSubmits": true,
	"RenewLeases": true, "SetTransferID": true, "SetTransferIDs": true, "AbortTransfers": true,
	"SetTransientState": true, "SetTerminalState": true, "TakeBack": true,
}

// fenceHooks refuse every write to the state store once the agent may no
// longer own the user's queue. The fence is checked before the call and
// handed to the backend in the context (state.WithFence), which checks it
// again once it holds what serialises its writes: an agent paused while it
// waited there writes nothing after losing its lock.
func (a *Agent) fenceHooks() state.Hooks {
	return state.Hooks{Before: func(ctx context.Context, op string) (context.Context, error) {
		if !fencedOps[op] {
			return ctx, nil
		}
		if err := a.fence(); err != nil {
			return nil, err
		}
		return state.WithFence(ctx, a.fence), nil
	}}
}

// fencedFTS checks the write fence right before every action on FTS (a
// submission, a cancellation): an agent that lost its lock acts on nothing.
// Reads (status, whoami, delegation) pass through.
type fencedFTS struct {
	FTS
	a *Agent
}

func (f fencedFTS) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	if err := f.a.fence(); err != nil {
		return "", err
	}
	return f.FTS.Submit(ctx, sub)
}

func (f fencedFTS) CancelFiles(ctx context.Context, job string, fileIDs []int64) ([]string, error) {
	if err := f.a.fence(); err != nil {
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
	if err := d.a.fence(); err != nil {
		return nil, err
	}
	return d.Deleter.Delete(ctx, urls)
}
