package statetest

import (
	"reflect"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Operator is the owner of the handles the suite's operator calls are
// made through (RequestKill, Retry, Unlock, Purge): the command line names
// the operator so, and the store records it as who asked.
const Operator = "carol@ops.example.org:cli"

var adminCases = []testCase{
	{"RequestKill", func(e *env) {
		s := e.store(Alice, "agent-a")
		q := e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3))
		sub := e.submit(s, 1, "job-1")[0]
		acq := e.claim(s, 1)[0]
		var fresh string
		for _, id := range q {
			if id != sub.ID && id != acq.ID {
				fresh = id
			}
		}
		unknown := ReqID(Alice, 99)
		e.clock.Advance(time.Minute)
		res, err := e.store(Alice, Operator).RequestKill(ctx, []string{fresh, acq.ID, sub.ID, unknown})
		if err != nil || len(res) != 4 {
			e.t.Fatal(res, err)
		}
		for i := 0; i < 3; i++ {
			if res[i].Err != nil || res[i].Rev == "" {
				e.t.Fatalf("kill item %d: %+v", i, res[i])
			}
		}
		wantErr(e.t, "kill of an unknown ID", res[3].Err, state.ErrNotFound)
		e.wantLast(e.wantState(s, fresh, state.StateKilled), state.Transition{From: state.StateNew, To: state.StateKilled, Reason: "killed by request"})
		for _, id := range []string{acq.ID, sub.ID} {
			tr := e.get(s, id)
			if !tr.KillRequested || tr.State.Terminal() {
				e.t.Fatalf("kill of an active transfer: %+v, want kill_requested and still active", tr)
			}
			// the request is in the history: who asked and when
			e.wantLast(tr, state.Transition{From: tr.State, To: tr.State, Reason: state.KillRequestedReason})
		}
		// the agent honours it: cancels in FTS, then records killed
		acq = e.get(s, acq.ID)
		sub = e.get(s, sub.ID)
		out := e.terminal(s, state.Terminal{Transfer: acq, Outcome: state.OutcomeKilled},
			state.Terminal{Transfer: sub, Outcome: state.OutcomeKilled, FTSJob: "job-1"})
		e.ok("SetTerminalState", out, nil, 2)
		e.wantState(s, acq.ID, state.StateKilled)
		e.wantState(s, sub.ID, state.StateKilled)
	}},
	{"Retry", func(e *env) {
		s := e.store(Alice, "agent-a")
		q := e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		ts := e.claim(s, 1)
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "no such file", Fatal: true}})
		e.ok("AbortTransfers", res, err, 1)
		failed := ts[0].ID
		active := q[1]
		if failed == active {
			active = q[0]
		}
		e.clock.Advance(time.Minute)
		res, err = e.store(Alice, Operator).Retry(ctx, []string{failed, active, ReqID(Alice, 99)})
		if err != nil || len(res) != 3 {
			e.t.Fatal(res, err)
		}
		if res[0].Err != nil {
			e.t.Fatal(res[0].Err)
		}
		wantErr(e.t, "retry of an active transfer", res[1].Err, state.ErrNotTerminal)
		wantErr(e.t, "retry of an unknown ID", res[2].Err, state.ErrNotFound)
		tr := e.wantState(s, failed, state.StateNew)
		if tr.Attempts != 0 || tr.Reason != "" || !tr.RetryAfter.IsZero() || tr.Rev != res[0].Rev {
			e.t.Fatalf("retried %+v", tr)
		}
		e.wantLast(tr, state.Transition{From: state.StateFailed, To: state.StateNew, Reason: "retry requested"})
		if got := e.claim(s, 2); len(got) != 2 {
			e.t.Fatalf("claimed %d after retry, want both", len(got))
		}
	}},
	{"RecordVerifications", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3))
		ts := e.submit(s, 2, "job-1")
		e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: ts[0], Outcome: state.OutcomeDone, FTSJob: "job-1"},
			state.Terminal{Transfer: ts[1], Outcome: state.OutcomeDone, FTSJob: "job-1"}), nil, 2)
		var active string
		for _, id := range []string{ReqID(Alice, 1), ReqID(Alice, 2), ReqID(Alice, 3)} {
			if id != ts[0].ID && id != ts[1].ID {
				active = id
			}
		}
		before := e.get(s, ts[0].ID)
		op := e.store(Alice, Operator)
		e.clock.Advance(time.Minute)
		res, err := op.RecordVerifications(ctx, []state.Verification{
			{ID: ts[0].ID, Result: state.VerifyMissing, Detail: "no such file"},
			{ID: ts[1].ID, Result: state.VerifyPresent},
			{ID: active, Result: state.VerifyPresent},
			{ID: ReqID(Alice, 99), Result: state.VerifyPresent},
			{ID: ts[1].ID, Result: "gone"},
		})
		if err != nil || len(res) != 5 || res[0].Err != nil || res[1].Err != nil {
			e.t.Fatal(res, err)
		}
		wantErr(e.t, "verification of an active transfer", res[2].Err, state.ErrNotTerminal)
		wantErr(e.t, "verification of an unknown ID", res[3].Err, state.ErrNotFound)
		wantErr(e.t, "an unknown result", res[4].Err, state.ErrInvalid)
		tr := e.get(s, ts[0].ID)
		e.wantLast(tr, state.Transition{From: state.StateDone, To: state.StateDone, Reason: "verified: missing: no such file", Verified: state.VerifyMissing})
		if tr.State != state.StateDone || !tr.LastUpdate.Equal(before.LastUpdate.Time) || len(tr.History) != len(before.History)+1 || tr.VerifiedAs() != state.VerifyMissing {
			e.t.Fatalf("verified %+v, want done, last_update kept, one entry more, verified missing", tr)
		}
		// the next verification replaces the entry
		e.clock.Advance(time.Minute)
		res, err = op.RecordVerifications(ctx, []state.Verification{{ID: ts[0].ID, Result: state.VerifyPresent, Detail: "size 1 matches"}})
		e.ok("RecordVerifications", res, err, 1)
		tr = e.get(s, ts[0].ID)
		if len(tr.History) != len(before.History)+1 || tr.VerifiedAs() != state.VerifyPresent {
			e.t.Fatalf("verified again: %d entries, last %+v; want %d, present", len(tr.History), tr.History[len(tr.History)-1], len(before.History)+1)
		}
		for _, c := range []struct {
			v    state.VerifyResult
			want []string
		}{{state.VerifyPresent, []string{ts[0].ID, ts[1].ID}}, {state.VerifyMissing, nil}} {
			got, err := s.List(ctx, state.Filter{User: Alice, Verified: c.v})
			if err != nil || len(got) != len(c.want) {
				e.t.Fatalf("List verified %s: %v %v, want %v", c.v, ids(got), err, c.want)
			}
		}
		// Counts counts them, with the newest verification's time; one
		// that no longer holds (the transfer was retried) is not counted
		res, err = op.Retry(ctx, []string{ts[1].ID})
		e.ok("Retry", res, err, 1)
		got := e.counts(s, state.CountsOptions{User: Alice}).Verified
		want := []state.VerifiedCount{{User: Alice, Result: state.VerifyPresent, Count: 1, Last: e.clock.Now().UTC()}}
		if len(got) != 1 || got[0].User != want[0].User || got[0].Result != want[0].Result || got[0].Count != 1 || !got[0].Last.Equal(want[0].Last) {
			e.t.Fatalf("Counts.Verified %+v, want %+v", got, want)
		}
	}},
	{"Get/NotFound", func(e *env) {
		s := e.store(Alice, "agent-a")
		_, err := s.Get(ctx, ReqID(Alice, 1))
		wantErr(e.t, "Get of an unknown ID", err, state.ErrNotFound)
	}},
	{"List/Filters", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		var all []string
		for i := 0; i < 4; i++ {
			all = append(all, e.enqueue(s, Req(Alice, i))[0])
			e.clock.Advance(time.Second)
		}
		r := Req(Bob, 1)
		r.Destination = Dst2
		bob := e.enqueue(s, r)[0]
		sub := e.submit(s, 1, "job-1")[0] // the oldest: all[0]
		acq := e.claim(s, 1)[0]           // all[1]
		e.claim(b, 1)
		cases := []struct {
			name string
			f    state.Filter
			want []string
		}{
			{"all", state.Filter{}, append(append([]string{}, all...), bob)},
			{"user", state.Filter{User: Alice}, all},
			{"states", state.Filter{States: []state.State{state.StateSubmitted, state.StateAcquired}}, []string{sub.ID, acq.ID, bob}},
			{"user and state", state.Filter{User: Alice, States: []state.State{state.StateNew}}, all[2:]},
			{"ids", state.Filter{IDs: []string{all[3], bob, ReqID(Alice, 99)}}, []string{all[3], bob}},
			{"link", state.Filter{Link: Src + "->" + Dst2}, []string{bob}},
			{"limit", state.Filter{User: Alice, Limit: 2}, all[:2]},
		}
		for _, c := range cases {
			got, err := s.List(ctx, c.f)
			if err != nil {
				e.t.Fatalf("%s: %v", c.name, err)
			}
			if !reflect.DeepEqual(ids(got), c.want) {
				e.t.Fatalf("%s: listed %v, want %v", c.name, ids(got), c.want)
			}
		}
	}},
	{"Summary/ByErrorClass", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4))
		ts := e.submit(s, 4, "job-1")
		e.ok("SetTerminalState", e.terminal(s,
			state.Terminal{Transfer: ts[0], Outcome: state.OutcomeFailed, Reason: "SOURCE [2] Result HTTP 404 : File not found", ErrorClass: "source_missing", FTSJob: "job-1"},
			state.Terminal{Transfer: ts[1], Outcome: state.OutcomeFailed, Reason: "no class", FTSJob: "job-1"},
			state.Terminal{Transfer: ts[2], Outcome: state.OutcomeFailed, Retryable: true, Reason: "TRANSFER [110] timed out", ErrorClass: "timeout", FTSJob: "job-1"},
			state.Terminal{Transfer: ts[3], Outcome: state.OutcomeDone, FTSJob: "job-1"},
		), nil, 4)
		for i, want := range []string{"source_missing", "", "timeout", ""} {
			if tr := e.get(s, ts[i].ID); tr.ErrorClass != want {
				e.t.Fatalf("%s (%s): error_class %q, want %q", tr.ID, tr.State, tr.ErrorClass, want)
			}
		}
		sum, err := s.Summary(ctx, state.SummaryOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		// failed transfers only: the retried one waits in new
		if want := map[string]int{"source_missing": 1, "unknown": 1}; !reflect.DeepEqual(sum.ByErrorClass, want) {
			e.t.Fatalf("by error class %v, want %v", sum.ByErrorClass, want)
		}
		// List by class: "unknown" selects the failed transfer without
		// one; the retried one keeps its class while it waits
		for class, want := range map[string][]string{"source_missing": {ts[0].ID}, "unknown": {ts[1].ID}, "timeout": {ts[2].ID}, "no_space": {}} {
			got, err := s.List(ctx, state.Filter{ErrorClass: class})
			if err != nil {
				e.t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), want) {
				e.t.Fatalf("List error class %s: %v, want %v", class, ids(got), want)
			}
		}
		res, err := s.Retry(ctx, []string{ts[0].ID})
		e.ok("Retry", res, err, 1)
		if tr := e.get(s, ts[0].ID); tr.ErrorClass != "" || tr.Reason != "" {
			e.t.Fatalf("retried transfer keeps reason %q class %q", tr.Reason, tr.ErrorClass)
		}
		if sum, err = s.Summary(ctx, state.SummaryOptions{}); err != nil || !reflect.DeepEqual(sum.ByErrorClass, map[string]int{"unknown": 1}) {
			e.t.Fatalf("after the retry: by error class %v, %v", sum.ByErrorClass, err)
		}
	}},
	{"Summary", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		for i := 0; i < 4; i++ {
			e.enqueue(s, Req(Alice, i))
			e.clock.Advance(time.Second)
		}
		r := Req(Bob, 1)
		r.Destination = Dst2
		bob := e.enqueue(s, r)[0]
		sub := e.submit(s, 2, "job-1") // alice 0 and 1
		released := e.claim(s, 1)[0]   // alice 2, released below: it waits since now
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: released, Reason: "shutdown", NoPenalty: true}})
		e.ok("AbortTransfers", res, err, 1)
		e.claim(b, 1)
		e.clock.Advance(time.Hour)
		tres, err := s.SetTransientState(ctx, []state.Transient{{Transfer: sub[1], Progress: state.Progress{FTSState: "ACTIVE"}}})
		e.ok("SetTransientState", tres, err, 1)
		sum, err := s.Summary(ctx, state.SummaryOptions{StaleAfter: 30 * time.Minute})
		if err != nil {
			e.t.Fatal(err)
		}
		if sum.Total != 5 || !reflect.DeepEqual(sum.ByState, map[state.State]int{state.StateSubmitted: 2, state.StateNew: 2, state.StateAcquired: 1}) {
			e.t.Fatalf("total %d by state %v", sum.Total, sum.ByState)
		}
		link, link2 := Src+"->"+Dst, Src+"->"+Dst2
		if sum.ByLink[link][state.StateNew] != 2 || sum.ByLink[link][state.StateSubmitted] != 2 || sum.ByLink[link2][state.StateAcquired] != 1 {
			e.t.Fatalf("by link %v", sum.ByLink)
		}
		if sum.ByUser[Alice][state.StateNew] != 2 || sum.ByUser[Bob][state.StateAcquired] != 1 || len(sum.ByUser) != 2 {
			e.t.Fatalf("by user %v", sum.ByUser)
		}
		if sum.OldestWaiting == nil || sum.OldestWaiting.ID != ReqID(Alice, 3) {
			e.t.Fatalf("oldest waiting %+v, want alice's 4th (the released one waits since its release)", sum.OldestWaiting)
		}
		if len(sum.Stale) != 1 || sum.Stale[0].ID != sub[0].ID {
			e.t.Fatalf("stale %v, want %s", ids(sum.Stale), sub[0].ID)
		}
		if len(sum.StuckAcquired) != 1 || sum.StuckAcquired[0].ID != bob {
			e.t.Fatalf("stuck acquired %v, want %s", ids(sum.StuckAcquired), bob)
		}
		mine, err := s.Summary(ctx, state.SummaryOptions{User: Bob, StaleAfter: 30 * time.Minute})
		if err != nil || mine.Total != 1 || len(mine.Stale) != 0 || len(mine.ByUser) != 1 {
			e.t.Fatalf("bob's summary %+v, %v", mine, err)
		}
	}},
	{"Summary/OneUserAmongOthers", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Bob, 1), Req(Bob, 2))
		sub := e.submit(s, 2, "job-a")
		e.terminal(s, state.Terminal{Transfer: sub[0], Outcome: state.OutcomeDone, FTSJob: "job-a"},
			state.Terminal{Transfer: sub[1], Outcome: state.OutcomeFailed, FTSJob: "job-a", Reason: "no such file", ErrorClass: "source_missing"})
		bs := e.submit(b, 1, "job-b")
		e.terminal(b, state.Terminal{Transfer: bs[0], Outcome: state.OutcomeFailed, FTSJob: "job-b", Reason: "no space", ErrorClass: "no_space"})
		sum, err := s.Summary(ctx, state.SummaryOptions{User: Alice})
		if err != nil {
			e.t.Fatal(err)
		}
		want := map[state.State]int{state.StateNew: 1, state.StateDone: 1, state.StateFailed: 1}
		if sum.Total != 3 || !sameCounts(sum.ByState, want) || !sameCounts(sum.ByUser[Alice], want) || len(sum.ByUser) != 1 {
			e.t.Fatalf("alice's summary: total %d, by state %v, by user %v; want 3, %v", sum.Total, sum.ByState, sum.ByUser, want)
		}
		if !sameCounts(sum.ByLink[Src+"->"+Dst], want) || len(sum.ByLink) != 1 || !reflect.DeepEqual(sum.ByErrorClass, map[string]int{"source_missing": 1}) {
			e.t.Fatalf("alice's summary: by link %v, by error class %v", sum.ByLink, sum.ByErrorClass)
		}
		if sum.OldestWaiting == nil || sum.OldestWaiting.User != Alice {
			e.t.Fatalf("alice's oldest waiting: %+v", sum.OldestWaiting)
		}
		if nobody, err := s.Summary(ctx, state.SummaryOptions{User: Carol}); err != nil || nobody.Total != 0 || len(nobody.ByState) != 0 {
			e.t.Fatalf("the summary of a user without transfers: %+v, %v", nobody, err)
		}
	}},
}
