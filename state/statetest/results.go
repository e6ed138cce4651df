package statetest

import (
	"time"

	"github.com/asyncstageout/aso/state"
)

// resultCases check that a write's results say what the store wrote: the
// state its rules decided and the lease, as a read then shows them.
var resultCases = []testCase{
	{"Results/StateAndLease", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4), Req(Alice, 5))
		ts := e.claim(s, 5)
		if len(ts) != 5 {
			e.t.Fatalf("claimed %d, want 5", len(ts))
		}
		e.clock.Advance(time.Minute)
		res, err := Prepare(ctx, s, ts[:1], "sid-1")
		e.ok("PrepareSubmit", res, err, 1)
		e.wrote(s, "PrepareSubmit", res, state.StateAcquired, e.clock.Now().Add(Policy.LeaseTTL))

		e.clock.Advance(time.Minute)
		res, err = s.RenewLeases(ctx, e.current(s, ts))
		e.ok("RenewLeases", res, err, 5)
		e.wrote(s, "RenewLeases", res, state.StateAcquired, e.clock.Now().Add(Policy.LeaseTTL))

		cur := e.current(s, ts)
		res, err = Commit(ctx, s, commitsOf(cur[:2]), "job-1")
		e.ok("SetTransferID", res, err, 2)
		e.wrote(s, "SetTransferID", res, state.StateSubmitted, time.Time{})

		// an abort with attempts left goes back to new; a fatal one fails
		res, err = s.AbortTransfers(ctx, []state.Abort{{Transfer: cur[2], Reason: "no PFN"}})
		e.ok("AbortTransfers", res, err, 1)
		e.wrote(s, "AbortTransfers (retried)", res, state.StateNew, time.Time{})
		res, err = s.AbortTransfers(ctx, []state.Abort{{Transfer: cur[3], Reason: "no PFN", Fatal: true}})
		e.ok("AbortTransfers", res, err, 1)
		e.wrote(s, "AbortTransfers (fatal)", res, state.StateFailed, time.Time{})

		// a retryable failure goes back to new; a final one fails; an
		// outcome already recorded is not written again and says so
		sub := e.current(s, ts[:2])
		res = e.terminal(s, state.Terminal{Transfer: sub[0], Outcome: state.OutcomeFailed, Retryable: true, Reason: "TRANSFER [110] timeout", FTSJob: "job-1"})
		e.ok("SetTerminalState", res, nil, 1)
		e.wrote(s, "SetTerminalState (retried)", res, state.StateNew, time.Time{})
		res = e.terminal(s, state.Terminal{Transfer: sub[1], Outcome: state.OutcomeFailed, Reason: "SOURCE [2] No such file", FTSJob: "job-1"})
		e.ok("SetTerminalState", res, nil, 1)
		e.wrote(s, "SetTerminalState (failed)", res, state.StateFailed, time.Time{})
		res = e.terminal(s, state.Terminal{Transfer: sub[1], Outcome: state.OutcomeFailed, Reason: "SOURCE [2] No such file", FTSJob: "job-1"})
		e.ok("SetTerminalState again", res, nil, 1)
		e.wrote(s, "SetTerminalState again", res, state.StateFailed, time.Time{})
	}},
}
