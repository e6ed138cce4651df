package statetest

import (
	"reflect"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

var countsCases = []testCase{
	{"Counts/Groups", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.countsWorld(s)
		all := e.counts(s, state.CountsOptions{})
		e.wantGroups(all.Groups, e.tallyOf(s, ""))
		if len(all.Hours) != 0 || len(all.Minutes) != 0 {
			e.t.Fatalf("finished counts without HoursSince or MinutesSince: %+v %+v", all.Hours, all.Minutes)
		}
		e.wantGroups(e.counts(s, state.CountsOptions{User: Alice}).Groups, e.tallyOf(s, Alice))
		// the reason classes are the Go function's, whatever the backend
		var cut, retrying bool
		for _, g := range all.Groups {
			cut = cut || (g.State == state.StateFailed && g.ErrorClass == "unknown" && strings.HasSuffix(g.Reason, "...") && len(g.Reason) <= 203)
			retrying = retrying || (g.State == state.StateNew && g.Reason == "TRANSFER [110] Connection timed out" && g.ErrorClass == "timeout")
		}
		if !cut || !retrying {
			e.t.Fatalf("groups %+v: want a long failure reason cut, and a transfer waiting to retry with its reason", all.Groups)
		}
	}},
	{"Counts/Finished", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4))
		ts := e.submit(s, 4, "job-1")
		at := func(i int, out state.Outcome) {
			e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: ts[i], Outcome: out, Reason: "no such file", FTSJob: "job-1"}), nil, 1)
		}
		at(0, state.OutcomeDone) // 03:04:05
		e.clock.Advance(30 * time.Minute)
		at(1, state.OutcomeFailed) // 03:34:05
		e.clock.Advance(time.Hour)
		at(2, state.OutcomeDone) // 04:34:05
		e.clock.Advance(2 * time.Minute)
		at(3, state.OutcomeDone) // 04:36:05
		now := e.clock.Now()
		link := Src + "->" + Dst
		h3, h4 := Start.Truncate(time.Hour), Start.Truncate(time.Hour).Add(time.Hour)
		got := e.counts(s, state.CountsOptions{HoursSince: now.Add(-24 * time.Hour), MinutesSince: now.Add(-time.Hour)})
		wantFinished(e, "hours", got.Hours, []state.FinishedCount{
			{At: h3, Link: link, State: state.StateDone, Count: 1}, {At: h3, Link: link, State: state.StateFailed, Count: 1},
			{At: h4, Link: link, State: state.StateDone, Count: 2}})
		wantFinished(e, "minutes", got.Minutes, []state.FinishedCount{
			{At: h4.Add(34 * time.Minute), Link: link, State: state.StateDone, Count: 1},
			{At: h4.Add(36 * time.Minute), Link: link, State: state.StateDone, Count: 1}})
		// since the middle of an hour counts that whole hour
		got = e.counts(s, state.CountsOptions{HoursSince: h4.Add(10 * time.Minute)})
		wantFinished(e, "hours since 04:10", got.Hours, []state.FinishedCount{{At: h4, Link: link, State: state.StateDone, Count: 2}})
		got = e.counts(s, state.CountsOptions{User: Bob, HoursSince: Start, MinutesSince: Start})
		if len(got.Hours)+len(got.Minutes)+len(got.Groups) != 0 {
			e.t.Fatalf("counts of a user without transfers: %+v", got)
		}
	}},
}

// countsWorld stores transfers of two users on two links in every state,
// failed with and without an error class, with reasons that the reason
// classes shorten, and one waiting to be retried.
func (e *env) countsWorld(s state.Store) {
	e.t.Helper()
	reqs := []state.Request{Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4), Req(Alice, 5), Req(Alice, 6), Req(Alice, 7), Req(Alice, 8)}
	e.enqueue(s, reqs...)
	abort := func(reason, class string, fatal bool) {
		ts := e.claim(s, 1)
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: reason, ErrorClass: class, Fatal: fatal}})
		e.ok("AbortTransfers", res, err, 1)
		e.clock.Advance(time.Minute)
	}
	abort(" \u00a0"+strings.Repeat("é", 99)+"xyz (detail)\u3000", "", true)
	abort("dependency "+ReqID(Bob, 9)+" is failed (after 1 attempt)", "source_missing", true)
	abort("TRANSFER [110] Connection timed out (after 3 attempts)", "timeout", false)
	sub := e.submit(s, 2, "job-1")
	e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: sub[0], Outcome: state.OutcomeDone, FTSJob: "job-1"},
		state.Terminal{Transfer: sub[1], Outcome: state.OutcomeFailed, ErrorClass: "checksum_mismatch", FTSJob: "job-1",
			Reason: "FTS job 6f3a1c2e-1b2c-5d4e-8f9a-0123456789ab: SOURCE [5] checksum (1 != 2)"}), nil, 2)
	e.clock.Advance(time.Minute)
	e.submit(s, 1, "job-2")
	b := e.store(Bob, "agent-b")
	r1, r2 := Req(Bob, 1), Req(Bob, 2)
	r1.Destination, r2.Destination = Dst2, Dst2
	e.enqueue(b, r1, r2)
	e.claim(b, 1)
}

func (e *env) counts(s state.Store, o state.CountsOptions) state.Counts {
	e.t.Helper()
	c, err := s.Counts(ctx, o)
	if err != nil {
		e.t.Fatalf("Counts(%+v): %v", o, err)
	}
	return c
}

// tallyOf counts the stored transfers of user ("" every user) as
// state.CountKeyOf groups them.
func (e *env) tallyOf(s state.Store, user string) []state.CountGroup {
	e.t.Helper()
	ts, err := s.List(ctx, state.Filter{User: user})
	if err != nil {
		e.t.Fatalf("List: %v", err)
	}
	tally := state.NewTally(state.CountsOptions{})
	for i := range ts {
		tally.Add(state.CountKeyOf(&ts[i]), 1, ts[i].LastUpdate.Time)
	}
	return tally.Counts().Groups
}

func (e *env) wantGroups(got, want []state.CountGroup) {
	e.t.Helper()
	if len(want) < 2 {
		e.t.Fatalf("the stored transfers make %d groups: the test needs more", len(want))
	}
	for i := range got {
		got[i].Oldest = got[i].Oldest.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("groups:\n got %+v\nwant %+v", got, want)
	}
}

func wantFinished(e *env, what string, got, want []state.FinishedCount) {
	e.t.Helper()
	for i := range got {
		got[i].At = got[i].At.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
