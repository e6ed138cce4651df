package cmd_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// pastAgent works on a store file as an agent of user whose clock is ago in
// the past, so that what it writes looks old to aso (stale, expired leases).
type pastAgent struct {
	t  testing.TB
	st *memfile.Store
}

func newPastAgent(t testing.TB, path, user string, ago time.Duration) *pastAgent {
	t.Helper()
	now := func() time.Time { return time.Now().Add(-ago) }
	st, err := memfile.Open(path, state.Config{Agent: state.Agent{User: user, Owner: "worker:42:test"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &pastAgent{t: t, st: st}
}

// claim claims one transfer and returns it.
func (a *pastAgent) claim() state.Transfer {
	a.t.Helper()
	ts, err := statetest.Claim(context.Background(), a.st, 1)
	if err != nil || len(ts) != 1 {
		a.t.Fatalf("claim: %v, %d transfers", err, len(ts))
	}
	return ts[0]
}

// submit claims one transfer and commits it to FTS job job.
func (a *pastAgent) submit(job string) state.Transfer {
	a.t.Helper()
	t := a.claim()
	res, err := statetest.Commit(context.Background(), a.st, []state.Commit{{Transfer: t, SourcePFN: "file:///src" + t.SourceLFN, DestPFN: "file:///dst" + t.DestinationLFN, FileID: 7}}, job)
	if err != nil || res[0].Err != nil {
		a.t.Fatalf("commit %s: %v %v", t.ID, err, res)
	}
	t, err = a.st.Get(context.Background(), t.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	return t
}

// finish claims and submits one transfer, then records outcome for it.
func (a *pastAgent) finish(job string, outcome state.Outcome, reason string) state.Transfer {
	a.t.Helper()
	t := a.submit(job)
	res, err := a.st.SetTerminalState(context.Background(), []state.Terminal{{Transfer: t, Outcome: outcome, Reason: reason, FTSJob: job}})
	if err != nil || res[0].Err != nil {
		a.t.Fatalf("terminal %s: %v %v", t.ID, err, res)
	}
	return t
}
