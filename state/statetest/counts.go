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

func wantFinished(e *env, what string, got, want []state.FinishedCount) {
	e.t.Helper()
	for i := range got {
		got[i].At = got[i].At.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
