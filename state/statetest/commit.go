package statetest

import (
	"errors"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

var commitCases = []testCase{
	{"AbortTransfers/CoolOffThenFailed", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		for attempt := 1; attempt <= Policy.MaxAttempts; attempt++ {
			ts := e.claim(s, 1)
			if len(ts) != 1 {
				e.t.Fatalf("attempt %d: claimed %d", attempt, len(ts))
			}
			res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "no pfn for site"}})
			e.ok("AbortTransfers", res, err, 1)
			tr := e.get(s, id)
			if tr.Attempts != attempt || !strings.Contains(tr.Reason, "no pfn for site") || tr.Owner != "" {
				e.t.Fatalf("attempt %d: %+v", attempt, tr)
			}
			if attempt < Policy.MaxAttempts {
				if tr.State != state.StateNew || !tr.RetryAfter.Equal(e.clock.Now().Add(Policy.CoolOff)) {
					e.t.Fatalf("attempt %d: state %s retry_after %s, want new after the cool-off", attempt, tr.State, tr.RetryAfter)
				}
			} else if tr.State != state.StateFailed {
				e.t.Fatalf("attempt %d: state %s, want failed", attempt, tr.State)
			}
			e.clock.Advance(Policy.CoolOff)
		}
		if got := e.claim(s, 1); len(got) != 0 {
			e.t.Fatalf("claimed a failed transfer: %v", ids(got))
		}
	}},
	{"AbortTransfers/FatalAndNoPenalty", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		ts := e.claim(s, 2)
		res, err := s.AbortTransfers(ctx, []state.Abort{
			{Transfer: ts[0], Reason: "permission denied", Fatal: true},
			{Transfer: ts[1], Reason: "shutting down", NoPenalty: true},
		})
		e.ok("AbortTransfers", res, err, 2)
		if tr := e.wantState(s, ts[0].ID, state.StateFailed); tr.Attempts != 1 || !strings.Contains(tr.Reason, "permission denied") {
			e.t.Fatalf("fatal abort: %+v", tr)
		}
		if tr := e.wantState(s, ts[1].ID, state.StateNew); tr.Attempts != 0 || !tr.RetryAfter.IsZero() {
			e.t.Fatalf("abort without penalty: attempts %d retry_after %s", tr.Attempts, tr.RetryAfter)
		}
		if got := e.claim(s, 5); len(got) != 1 || got[0].ID != ts[1].ID {
			e.t.Fatalf("claimed %v, want %s at once", ids(got), ts[1].ID)
		}
	}},
	{"PrepareSubmit/Durable", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1))
		ts := e.claim(s, 1)
		e.clock.Advance(time.Minute)
		res, err := Prepare(ctx, s, ts, "sid-42")
		e.ok("PrepareSubmit", res, err, 1)
		other := e.store(Alice, "observer")
		for _, h := range []state.Store{s, other} {
			tr := e.get(h, ts[0].ID)
			if tr.SubmitSID != "sid-42" || tr.Rev != res[0].Rev || tr.State != state.StateAcquired {
				e.t.Fatalf("after PrepareSubmit: %+v (result rev %s)", tr, res[0].Rev)
			}
			if want := e.clock.Now().Add(Policy.LeaseTTL); !tr.LeaseExpires.Equal(want) {
				e.t.Fatalf("lease expires %s, want renewed to %s", tr.LeaseExpires, want)
			}
		}
		// the new revision is what the next call carries
		ts[0].Rev = res[0].Rev
		res, err = Commit(ctx, s, commitsOf(ts), "job-42")
		e.ok("SetTransferID", res, err, 1)
		if tr := e.wantState(other, ts[0].ID, state.StateSubmitted); tr.SubmitSID != "sid-42" && tr.SubmitSID != "" {
			e.t.Fatalf("submit_sid %q", tr.SubmitSID)
		}
	}},
	{"ActiveTransfers/GroupsByJob", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		reqs := []state.Request{Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4), Req(Alice, 5), Req(Bob, 1)}
		e.enqueue(s, reqs...)
		jobA := e.submit(s, 2, "job-a")
		e.clock.Advance(time.Second)
		jobB := e.submit(s, 2, "job-b")
		e.submit(b, 1, "job-c")
		jobs, err := Active(ctx, s, Alice)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(jobs) != 2 || jobs[0].ID != "job-a" || jobs[1].ID != "job-b" {
			e.t.Fatalf("jobs %+v, want job-a then job-b", jobs)
		}
		for i, want := range [][]state.Transfer{jobA, jobB} {
			got := map[string]state.Transfer{}
			for _, tr := range jobs[i].Transfers {
				got[tr.ID] = tr
			}
			if len(got) != len(want) {
				e.t.Fatalf("job %s has %d transfers, want %d", jobs[i].ID, len(got), len(want))
			}
			for _, w := range want {
				g, ok := got[w.ID]
				if !ok || g.Rev != w.Rev || g.FTSJob != jobs[i].ID || g.DestPFN != w.DestPFN || g.State != state.StateSubmitted {
					e.t.Fatalf("job %s: transfer %s is %+v, want %+v", jobs[i].ID, w.ID, g, w)
				}
			}
		}
		if jobs, err := Active(ctx, s, Bob); err != nil || len(jobs) != 1 || jobs[0].ID != "job-c" {
			e.t.Fatalf("bob's jobs %+v, %v", jobs, err)
		}
	}},
	{"SetTransientState/Progress", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		sub := e.submit(s, 1, "job-1")[0]
		e.clock.Advance(time.Minute)
		res, err := s.SetTransientState(ctx, []state.Transient{{Transfer: sub, Progress: state.Progress{FTSState: "ACTIVE", Bytes: 512, Throughput: 1.5}}})
		e.ok("SetTransientState", res, err, 1)
		tr := e.wantState(s, sub.ID, state.StateSubmitted)
		if tr.Progress == nil || tr.Progress.FTSState != "ACTIVE" || tr.Progress.Bytes != 512 || !tr.Progress.Updated.Equal(e.clock.Now()) {
			e.t.Fatalf("progress %+v", tr.Progress)
		}
		if !tr.LastUpdate.Equal(e.clock.Now()) || tr.Rev != res[0].Rev {
			e.t.Fatalf("last_update %s rev %s, want %s and %s", tr.LastUpdate, tr.Rev, e.clock.Now(), res[0].Rev)
		}
		// sub carries the revision before the update: a stale write
		res, err = s.SetTransientState(ctx, []state.Transient{{Transfer: sub, Progress: state.Progress{FTSState: "ACTIVE", Bytes: 1}}})
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, state.ErrConflict) {
			e.t.Fatalf("stale transient write: %+v, %v; want ErrConflict", res, err)
		}
		e.unchanged(s, tr)
		acq := e.claim(s, 1)[0]
		res, err = s.SetTransientState(ctx, []state.Transient{{Transfer: acq, Progress: state.Progress{FTSState: "ACTIVE"}}})
		if err != nil || len(res) != 1 {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "transient state of an acquired transfer", res[0].Err, state.ErrLeaseLost)
		done, err := s.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-1"}})
		e.ok("SetTerminalState", done, err, 1)
		res, err = s.SetTransientState(ctx, []state.Transient{{Transfer: e.get(s, sub.ID), Progress: state.Progress{FTSState: "ACTIVE"}}})
		if err != nil || len(res) != 1 {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "transient state of a done transfer", res[0].Err, state.ErrLeaseLost)
		e.wantState(s, sub.ID, state.StateDone)
	}},
}
