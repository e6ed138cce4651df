package statetest

import (
	"errors"
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

// memArchive is an Archiver in memory: synced is what was written before
// the last Sync, records every transfer written.
type memArchive struct {
	written, synced []string
	records         []state.Transfer
	fail            error
}

func (a *memArchive) Write(ts []state.Transfer) error {
	if a.fail != nil {
		return a.fail
	}
	for _, t := range ts {
		a.written = append(a.written, t.ID)
		a.records = append(a.records, t)
	}
	return nil
}

func (a *memArchive) Sync() error {
	a.synced = slices.Clone(a.written)
	return nil
}

var purgeCases = []testCase{
	{"Purge/TerminalOlderThan", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(a, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3))
		e.enqueue(b, Req(Bob, 1))
		old := e.finish(a, 2, "job-1", state.OutcomeDone)
		old = append(old, e.finish(a, 1, "job-2", state.OutcomeFailed)...)
		bobs := e.finish(b, 1, "job-3", state.OutcomeDone)
		e.clock.Advance(2 * time.Hour)
		e.enqueue(a, Req(Alice, 5))
		recent := e.finish(a, 1, "job-4", state.OutcomeDone)
		waiting := e.enqueue(a, Req(Alice, 4))[0]
		p := a

		broken := &memArchive{fail: errors.New("disk full")}
		if n, err := p.Purge(ctx, state.PurgeOptions{User: Alice, Before: e.clock.Now().Add(-time.Hour), Archive: broken}); err == nil || n != 0 {
			e.t.Fatalf("Purge with a failing archive: %d removed, %v; want an error and nothing removed", n, err)
		}
		for _, id := range old {
			e.get(a, id)
		}

		arch := &memArchive{}
		stored := map[string]state.Transfer{}
		for _, id := range old {
			stored[id] = e.get(a, id)
		}
		n, err := e.store(Alice, Operator).Purge(ctx, state.PurgeOptions{User: Alice, Before: e.clock.Now().Add(-time.Hour), Archive: arch})
		if err != nil || n != len(old) {
			e.t.Fatalf("Purge: %d removed, %v; want %d", n, err, len(old))
		}
		// each archived record is the transfer as stored, with a last
		// history entry saying who purged it and when
		for _, r := range arch.records {
			e.wantLast(r, state.Transition{From: r.State, To: r.State, Reason: state.PurgedReason})
			was := stored[r.ID]
			if r.State != was.State || !r.LastUpdate.Equal(was.LastUpdate.Time) || len(r.History) != len(was.History)+1 {
				e.t.Fatalf("archived %+v, want the stored %+v with one more history entry", r, was)
			}
		}
		slices.Sort(arch.synced)
		want := slices.Sorted(slices.Values(old))
		if !slices.Equal(arch.synced, want) {
			e.t.Fatalf("archived and synced %v, want %v", arch.synced, want)
		}
		for _, id := range old {
			if _, err := a.Get(ctx, id); !errors.Is(err, state.ErrNotFound) {
				e.t.Fatalf("purged transfer %s: Get %v, want ErrNotFound", id, err)
			}
		}
		e.wantState(a, waiting, state.StateNew)
		e.wantState(a, recent[0], state.StateDone)
		e.wantState(b, bobs[0], state.StateDone)
		sum, err := a.Summary(ctx, state.SummaryOptions{User: Alice})
		if err != nil || sum.Total != 2 {
			e.t.Fatalf("Summary after purge: total %d, %v; want 2", sum.Total, err)
		}

		// every user, no archive
		n, err = p.Purge(ctx, state.PurgeOptions{Before: e.clock.Now().Add(time.Second)})
		if err != nil || n != 2 {
			e.t.Fatalf("Purge of every user: %d removed, %v; want bob's and alice's recent one", n, err)
		}
		e.wantState(a, waiting, state.StateNew)
		// a purged request can be enqueued again
		e.enqueue(a, Req(Alice, 1))
		e.wantState(a, ReqID(Alice, 1), state.StateNew)
		if got := e.claim(a, 10); len(got) != 2 {
			e.t.Fatalf("claimed %d after purge, want the 2 new ones", len(got))
		}
	}},
}
