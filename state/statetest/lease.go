package statetest

import (
	"time"

	"github.com/asyncstageout/aso/state"
)

// leaseOp is one agent call that needs a held lease, with a check of its
// effect on a transfer it still holds.
type leaseOp struct {
	name  string
	call  func(s state.Store, ts []state.Transfer) ([]state.Result, error)
	check func(e *env, tr state.Transfer)
}

var leaseOps = []leaseOp{
	{"SetTransferID", func(s state.Store, ts []state.Transfer) ([]state.Result, error) {
		return Commit(ctx, s, commitsOf(ts), "job-1")
	}, func(e *env, tr state.Transfer) {
		if tr.State != state.StateSubmitted || tr.FTSJob != "job-1" || tr.DestPFN == "" || tr.FTSFileID == 0 {
			e.t.Fatalf("committed %+v", tr)
		}
	}},
	{"AbortTransfers", func(s state.Store, ts []state.Transfer) ([]state.Result, error) {
		ab := make([]state.Abort, len(ts))
		for i, tr := range ts {
			ab[i] = state.Abort{Transfer: tr, Reason: "no pfn"}
		}
		return s.AbortTransfers(ctx, ab)
	}, func(e *env, tr state.Transfer) {
		if tr.State != state.StateNew || tr.Attempts != 1 || tr.Owner != "" {
			e.t.Fatalf("aborted %+v", tr)
		}
	}},
	{"SetTerminalState", func(s state.Store, ts []state.Transfer) ([]state.Result, error) {
		out := make([]state.Terminal, len(ts))
		for i, tr := range ts {
			out[i] = state.Terminal{Transfer: tr, Outcome: state.OutcomeKilled, Reason: "killed before submission"}
		}
		return s.SetTerminalState(ctx, out)
	}, func(e *env, tr state.Transfer) {
		if tr.State != state.StateKilled {
			e.t.Fatalf("killed %+v", tr)
		}
	}},
	{"PrepareSubmit", func(s state.Store, ts []state.Transfer) ([]state.Result, error) {
		return Prepare(ctx, s, ts, "sid-1")
	}, func(e *env, tr state.Transfer) {
		if tr.State != state.StateAcquired || tr.SubmitSID != "sid-1" {
			e.t.Fatalf("prepared %+v", tr)
		}
	}},
	{"RenewLeases", func(s state.Store, ts []state.Transfer) ([]state.Result, error) {
		return s.RenewLeases(ctx, ts)
	}, func(e *env, tr state.Transfer) {
		if want := e.clock.Now().Add(Policy.LeaseTTL); !tr.LeaseExpires.Equal(want) {
			e.t.Fatalf("lease expires %s, want %s", tr.LeaseExpires, want)
		}
	}},
}

var leaseCases = func() []testCase {
	cs := []testCase{{"Lease/ExpiredLeaseIsClaimable", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		id := e.enqueue(a, Req(Alice, 1))[0]
		e.claim(a, 1)
		e.clock.Advance(Policy.LeaseTTL - time.Second)
		if got := e.claim(b, 1); len(got) != 0 {
			e.t.Fatalf("agent b claimed %v under a live lease", ids(got))
		}
		e.clock.Advance(time.Second)
		got := e.claim(b, 1)
		if len(got) != 1 || got[0].ID != id || got[0].Owner != "agent-b" {
			e.t.Fatalf("agent b claimed %+v after the lease expired", got)
		}
		if tr := e.get(a, id); tr.Owner != "agent-b" || tr.State != state.StateAcquired {
			e.t.Fatalf("stored %+v", tr)
		}
	}}}
	cs = append(cs, testCase{"Lease/RenewKeepsClaim", func(e *env) {
		a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
		e.enqueue(a, Req(Alice, 1))
		ts := e.claim(a, 1)
		e.clock.Advance(Policy.LeaseTTL - time.Minute)
		res, err := a.RenewLeases(ctx, ts)
		e.ok("RenewLeases", res, err, 1)
		e.clock.Advance(2 * time.Minute) // past the first expiry
		if got := e.claim(b, 1); len(got) != 0 {
			e.t.Fatalf("agent b claimed %v under a renewed lease", ids(got))
		}
		e.clock.Advance(Policy.LeaseTTL)
		if got := e.claim(b, 1); len(got) != 1 {
			e.t.Fatalf("agent b could not claim once the renewed lease expired")
		}
	}})
	for _, op := range leaseOps {
		cs = append(cs, testCase{"Lease/LostLease/" + op.name, func(e *env) { lostLease(e, op) }})
	}
	return cs
}()

// lostLease: agent a holds x and y; x's lease expires and agent b re-claims
// it; a's call must fail for x without writing and succeed for y.
func lostLease(e *env, op leaseOp) {
	a, b := e.store(Alice, "agent-a"), e.store(Alice, "agent-b")
	queued := e.enqueue(a, Req(Alice, 1), Req(Alice, 2))
	x := e.claim(a, 1)[0]
	e.clock.Advance(Policy.LeaseTTL / 2)
	y := e.claim(a, 1)[0]
	if x.ID != queued[0] || y.ID != queued[1] {
		e.t.Fatalf("claimed %s then %s, want %v", x.ID, y.ID, queued)
	}
	e.clock.Advance(Policy.LeaseTTL/2 + time.Second)
	if got := e.claim(b, 10); len(got) != 1 || got[0].ID != x.ID {
		e.t.Fatalf("agent b claimed %v, want only %s", got, x.ID)
	}
	before := e.get(a, x.ID)
	res, err := op.call(a, []state.Transfer{x, y})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(res) != 2 || res[0].ID != x.ID || res[1].ID != y.ID {
		e.t.Fatalf("results %+v", res)
	}
	wantErr(e.t, op.name+" on a lost lease", res[0].Err, state.ErrLeaseLost)
	if res[1].Err != nil {
		e.t.Fatalf("%s on a held lease: %v", op.name, res[1].Err)
	}
	e.unchanged(a, before)
	tr := e.get(a, y.ID)
	if tr.Rev != res[1].Rev {
		e.t.Fatalf("result rev %q, stored %q", res[1].Rev, tr.Rev)
	}
	op.check(e, tr)
}
