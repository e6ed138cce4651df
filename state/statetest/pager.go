package statetest

import (
	"time"

	"github.com/asyncstageout/aso/state"
)

// pagerCases prove state.ActivePager against ActiveTransfers; a store that
// does not implement it skips them.
var pagerCases = []testCase{
	{"ActivePager/AgreesWithActiveTransfers", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		p := s
		var reqs []state.Request
		for n := 1; n <= 9; n++ {
			reqs = append(reqs, Req(Alice, n))
		}
		e.enqueue(s, append(reqs, Req(Bob, 1))...)
		e.submit(s, 2, "job-a")
		e.clock.Advance(time.Second)
		e.submit(s, 3, "job-b")
		e.clock.Advance(time.Second)
		e.submit(s, 1, "job-c")
		e.submit(b, 1, "job-bob")
		e.claim(s, 1) // acquired, not active
		jobs := e.checkPager(s, p, Alice, "job-a", "job-b", "job-c")
		if n := len(jobs[1].Transfers); n != 3 {
			e.t.Fatalf("job-b has %d transfers, want 3", n)
		}
		// progress on job-a makes it the newest: the order follows
		e.clock.Advance(time.Minute)
		var items []state.Transient
		for _, tr := range jobs[0].Transfers {
			items = append(items, state.Transient{Transfer: tr, Progress: state.Progress{FTSState: "ACTIVE"}})
		}
		res, err := s.SetTransientState(ctx, items)
		e.ok("SetTransientState", res, err, len(items))
		e.checkPager(s, p, Alice, "job-b", "job-c", "job-a")
		e.checkPager(b, b, Bob, "job-bob")
		if got, err := p.ActiveTransfersOf(ctx, Alice, []string{"job-bob"}); err != nil || len(got) != 0 {
			e.t.Fatalf("alice's transfers in bob's job: %+v, %v; want none", got, err)
		}
	}},
	{"ActivePager/EndedAndUnknownJobs", func(e *env) {
		s := e.store(Alice, "agent-a")
		p := s
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4))
		a := e.submit(s, 2, "job-a")
		bs := e.submit(s, 2, "job-b")
		outs := []state.Terminal{
			{Transfer: a[0], Outcome: state.OutcomeDone, FTSJob: "job-a"},
			{Transfer: a[1], Outcome: state.OutcomeFailed, Reason: "no such file", FTSJob: "job-a"},
			{Transfer: bs[0], Outcome: state.OutcomeDone, FTSJob: "job-b"},
		}
		res, err := s.SetTerminalState(ctx, outs)
		e.ok("SetTerminalState", res, err, len(outs))
		refs, err := p.ActiveJobs(ctx, Alice)
		if err != nil || len(refs) != 1 || refs[0] != (state.JobRef{ID: "job-b", Transfers: 1}) {
			e.t.Fatalf("ActiveJobs after job-a ended and half of job-b: %+v, %v", refs, err)
		}
		got, err := p.ActiveTransfersOf(ctx, Alice, []string{"job-a", "no-such-job", "job-b"})
		if err != nil || len(got) != 1 || got[0].ID != "job-b" || len(got[0].Transfers) != 1 || got[0].Transfers[0].ID != bs[1].ID {
			e.t.Fatalf("ActiveTransfersOf an ended, an unknown and a live job: %+v, %v; want job-b with %s", got, err, bs[1].ID)
		}
		if got, err := p.ActiveTransfersOf(ctx, Alice, []string{"no-such-job"}); err != nil || len(got) != 0 {
			e.t.Fatalf("ActiveTransfersOf an unknown job: %+v, %v", got, err)
		}
		if refs, err := p.ActiveJobs(ctx, Bob); err != nil || len(refs) != 0 {
			e.t.Fatalf("ActiveJobs of a user without transfers: %+v, %v", refs, err)
		}
	}},
}
