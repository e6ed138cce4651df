package statetest

import (
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

var terminalCases = []testCase{
	{"SetTerminalState/Outcomes", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3))
		ts := e.submit(s, 3, "job-1")
		res := e.terminal(s,
			state.Terminal{Transfer: ts[0], Outcome: state.OutcomeDone, FTSJob: "job-1"},
			state.Terminal{Transfer: ts[1], Outcome: state.OutcomeFailed, Reason: "checksum mismatch", FTSJob: "job-1"},
			state.Terminal{Transfer: ts[2], Outcome: state.OutcomeKilled, Reason: "cancelled", FTSJob: "job-1"})
		e.ok("SetTerminalState", res, nil, 3)
		e.wantState(s, ts[0].ID, state.StateDone)
		if tr := e.wantState(s, ts[1].ID, state.StateFailed); !strings.Contains(tr.Reason, "checksum mismatch") || tr.Attempts != 1 {
			e.t.Fatalf("failed transfer %+v", tr)
		}
		e.wantState(s, ts[2].ID, state.StateKilled)
		if jobs, err := Active(ctx, s, Alice); err != nil || len(jobs) != 0 {
			e.t.Fatalf("active after the end: %+v %v", jobs, err)
		}
	}},
	{"SetTerminalState/RetryableUntilMaxAttempts", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		for attempt := 1; attempt <= Policy.MaxAttempts; attempt++ {
			tr := e.submit(s, 1, "job-x")[0]
			e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: tr, Outcome: state.OutcomeFailed, Retryable: true, Reason: "connection reset", FTSJob: "job-x"}), nil, 1)
			tr = e.get(s, id)
			if tr.Attempts != attempt {
				e.t.Fatalf("attempt %d: attempts %d", attempt, tr.Attempts)
			}
			if attempt < Policy.MaxAttempts {
				if tr.State != state.StateNew || tr.FTSJob != "" || !tr.RetryAfter.Equal(e.clock.Now().Add(Policy.CoolOff)) {
					e.t.Fatalf("attempt %d: %+v, want new after the cool-off", attempt, tr)
				}
				if got := e.claim(s, 1); len(got) != 0 {
					e.t.Fatalf("claimed during the cool-off")
				}
			} else if tr.State != state.StateFailed || !strings.Contains(tr.Reason, "connection reset") {
				e.t.Fatalf("attempt %d: %+v, want failed", attempt, tr)
			}
			e.clock.Advance(Policy.CoolOff)
		}
	}},
	{"SetTerminalState/LostJob", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1))
		tr := e.submit(s, 1, "job-gone")[0]
		e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: tr, Outcome: state.OutcomeLost, FTSJob: "job-gone"}), nil, 1)
		got := e.wantState(s, tr.ID, state.StateNew)
		if got.Attempts != 1 || got.FTSJob != "" || !got.RetryAfter.IsZero() {
			e.t.Fatalf("lost job: %+v, want attempts 1, no job, no cool-off", got)
		}
		if c := e.claim(s, 1); len(c) != 1 {
			e.t.Fatalf("a transfer of a lost job must be claimable at once")
		}
	}},
	{"SetTerminalState/LostJobNoPenalty", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1))
		tr := e.submit(s, 1, "job-gone")[0]
		e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: tr, Outcome: state.OutcomeLost, NoPenalty: true, FTSJob: "job-gone"}), nil, 1)
		got := e.wantState(s, tr.ID, state.StateNew)
		if got.Attempts != 0 || got.FTSJob != "" || got.SubmitSID != "" || !got.RetryAfter.IsZero() {
			e.t.Fatalf("job lost with its FTS: %+v, want no attempt, no job, no sid, no cool-off", got)
		}
		if c := e.claim(s, 1); len(c) != 1 {
			e.t.Fatalf("a transfer of a job lost with its FTS must be claimable at once")
		}
	}},
	{"SetTerminalState/WrongJob", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		ts := e.submit(s, 2, "job-1")
		res := e.terminal(s,
			state.Terminal{Transfer: ts[0], Outcome: state.OutcomeDone, FTSJob: "job-other"},
			state.Terminal{Transfer: ts[1], Outcome: state.OutcomeDone, FTSJob: "job-1"})
		wantErr(e.t, "outcome of another job", res[0].Err, state.ErrLeaseLost)
		if res[1].Err != nil {
			e.t.Fatal(res[1].Err)
		}
		e.unchanged(s, ts[0])
		e.wantState(s, ts[1].ID, state.StateDone)
	}},
	{"SetTerminalState/IdempotentAndFinal", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1))
		tr := e.submit(s, 1, "job-1")[0]
		first := e.terminal(s, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-1"})
		e.ok("SetTerminalState", first, nil, 1)
		done := e.get(s, tr.ID)
		again := e.terminal(s, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-1"})
		e.ok("SetTerminalState again", again, nil, 1)
		if again[0].Rev != first[0].Rev {
			e.t.Fatalf("repeated outcome wrote a new revision %s (was %s)", again[0].Rev, first[0].Rev)
		}
		e.unchanged(s, done)
		other := e.terminal(s, state.Terminal{Transfer: done, Outcome: state.OutcomeFailed, Reason: "late", FTSJob: "job-1"})
		wantErr(e.t, "another outcome for a done transfer", other[0].Err, state.ErrLeaseLost)
		e.unchanged(s, done)
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: done, Reason: "x"}})
		if err != nil || len(res) != 1 {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "abort of a done transfer", res[0].Err, state.ErrLeaseLost)
		res, err = Commit(ctx, s, commitsOf([]state.Transfer{done}), "job-2")
		if err != nil || len(res) != 1 {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "commit of a done transfer", res[0].Err, state.ErrLeaseLost)
		res, err = s.RequestKill(ctx, []string{done.ID})
		if err != nil || len(res) != 1 {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "kill of a done transfer", res[0].Err, state.ErrTerminal)
		for name, call := range map[string]func() ([]state.Result, error){
			"PrepareSubmit": func() ([]state.Result, error) { return Prepare(ctx, s, []state.Transfer{done}, "sid-2") },
			"RenewLeases":   func() ([]state.Result, error) { return s.RenewLeases(ctx, []state.Transfer{done}) },
			"SetTransientState": func() ([]state.Result, error) {
				return s.SetTransientState(ctx, []state.Transient{{Transfer: done, Progress: state.Progress{FTSState: "ACTIVE"}}})
			},
		} {
			res, err := call()
			if err != nil || len(res) != 1 {
				e.t.Fatal(name, res, err)
			}
			wantErr(e.t, name+" of a done transfer", res[0].Err, state.ErrLeaseLost)
		}
		e.clock.Advance(24 * time.Hour)
		if got := e.claim(s, 10); len(got) != 0 {
			e.t.Fatalf("claimed a done transfer: %v", ids(got))
		}
		e.unchanged(s, done)
	}},
}
