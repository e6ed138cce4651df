package statetest

import (
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// ownerCases state the ownership record: a transfer records that it owns
// its destination in the write of its first submission record, and the
// transfers that name a destination are read by destination.
var ownerCases = []testCase{
	{"Ownership/RecordedWithTheFirstSubmissionRecord", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		ts := e.claim(s, 1)
		if tr := e.get(s, id); !tr.DestOwnedSince.IsZero() {
			e.t.Fatalf("claimed, not prepared: dest_owned_since %s, want none", tr.DestOwnedSince)
		}
		e.wantRefs(s, Req(Alice, 1), state.DestRef{ID: id, User: Alice, State: state.StateAcquired})
		e.clock.Advance(time.Minute)
		first := e.clock.Now()
		res, err := Prepare(ctx, s, ts, "sid-1")
		e.ok("PrepareSubmits", res, err, 1)
		tr := e.get(e.store(Alice, "observer"), id)
		if !tr.DestOwnedSince.Equal(first) || tr.SubmitSID != "sid-1" || tr.Rev != res[0].Rev {
			e.t.Fatalf("after PrepareSubmits: dest_owned_since %s sid %q rev %s; want %s, sid-1 and the result's %s",
				tr.DestOwnedSince, tr.SubmitSID, tr.Rev, first, res[0].Rev)
		}
		e.wantRefs(s, Req(Alice, 1), state.DestRef{ID: id, User: Alice, State: state.StateAcquired, Owned: true})
		// an abort and a second submission keep the first record
		res, err = s.AbortTransfers(ctx, []state.Abort{{Transfer: tr, Reason: "submission refused"}})
		e.ok("AbortTransfers", res, err, 1)
		e.clock.Advance(Policy.CoolOff)
		again := e.claim(s, 1)
		res, err = Prepare(ctx, s, again, "sid-2")
		e.ok("PrepareSubmits", res, err, 1)
		if tr := e.get(s, id); !tr.DestOwnedSince.Equal(first) || tr.SubmitSID != "sid-2" {
			e.t.Fatalf("second submission: dest_owned_since %s sid %q; want the first's %s and sid-2", tr.DestOwnedSince, tr.SubmitSID, first)
		}
	}},
	{"Ownership/ClearedWhenItYields", func(e *env) {
		// a transfer that recorded its ownership in this pass and yields
		// the destination to another before FTS saw it (state.YieldTo)
		// owns nothing once released
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		res, err := Prepare(ctx, s, e.claim(s, 1), "sid-1")
		e.ok("PrepareSubmits", res, err, 1)
		res, err = s.AbortTransfers(ctx, []state.Abort{{Transfer: e.get(s, id), NoPenalty: true, Wait: true, Disown: true, Reason: "waiting: another"}})
		e.ok("AbortTransfers", res, err, 1)
		tr := e.get(s, id)
		if tr.State != state.StateNew || !tr.DestOwnedSince.IsZero() || tr.SubmitSID != "" || tr.Attempts != 0 || !tr.RetryAfter.After(e.clock.Now()) {
			e.t.Fatalf("yielded: %s, dest_owned_since %s, sid %q, %d attempts, retry after %s; want new, none, none, 0, after the cool-off",
				tr.State, tr.DestOwnedSince, tr.SubmitSID, tr.Attempts, tr.RetryAfter)
		}
		e.wantRefs(s, Req(Alice, 1), state.DestRef{ID: id, User: Alice, State: state.StateNew})
	}},
	{"DestinationRefs/ByDestination", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		same := Req(Bob, 7)
		same.DestinationLFN = Req(Alice, 1).DestinationLFN // bob's request for alice's file
		other := Req(Alice, 2)
		other.Destination = Dst2 // the same LFN at another site is another file
		other.DestinationLFN = Req(Alice, 1).DestinationLFN
		e.enqueue(s, Req(Alice, 1))
		e.clock.Advance(time.Second)
		e.enqueue(s, other, Req(Alice, 3))
		e.enqueue(b, same)
		done := e.finish(s, 1, "job-1", state.OutcomeDone) // Req(Alice, 1): the oldest, claimed first
		if len(done) != 1 || done[0] != ReqID(Alice, 1) {
			e.t.Fatalf("finished %v, want %s", done, ReqID(Alice, 1))
		}
		e.wantRefs(s, Req(Alice, 1),
			state.DestRef{ID: ReqID(Alice, 1), User: Alice, State: state.StateDone},
			state.DestRef{ID: same.ID(), User: Bob, State: state.StateNew})
		refs, err := s.DestinationRefs(ctx, []state.Destination{{Site: Dst, LFN: "/store/user/nobody/none.root"}})
		if err != nil || len(refs) != 0 {
			e.t.Fatalf("DestinationRefs of a destination nobody names: %v, %v", refs, err)
		}
		for _, r := range refs[state.Destination{Site: Dst, LFN: Req(Alice, 1).DestinationLFN}] {
			if r.Owns() != (r.State == state.StateDone) {
				e.t.Fatalf("%+v: Owns %v", r, r.Owns())
			}
		}
		// a purged transfer names nothing
		e.clock.Advance(2 * time.Hour)
		n, err := e.store(Alice, Operator).Purge(ctx, state.PurgeOptions{User: Alice, Before: e.clock.Now().Add(-time.Hour)})
		if err != nil || n != 1 {
			e.t.Fatalf("Purge: %d, %v; want 1", n, err)
		}
		e.wantRefs(s, Req(Alice, 1), state.DestRef{ID: same.ID(), User: Bob, State: state.StateNew})
	}},
	{"SetTerminalState/DestCopy", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		ts := e.submit(s, 2, "job-1")
		e.ok("SetTerminalState", e.terminal(s,
			state.Terminal{Transfer: ts[0], Outcome: state.OutcomeFailed, Reason: "TRANSFER [110] timeout", Retryable: true, FTSJob: "job-1", DestCopy: state.CopyLeft},
			state.Terminal{Transfer: ts[1], Outcome: state.OutcomeFailed, Reason: "SOURCE [2] missing", FTSJob: "job-1"}), nil, 2)
		left, kept := e.get(s, ts[0].ID), e.get(s, ts[1].ID)
		if left.DestWritten != ts[0].DestPFN || left.DestWritten == "" || kept.DestWritten != "" {
			e.t.Fatalf("dest_written %q and %q; want %q (copy left) and none", left.DestWritten, kept.DestWritten, ts[0].DestPFN)
		}
		e.clock.Advance(Policy.CoolOff)
		again := e.submit(s, 1, "job-2")[0]
		e.ok("SetTerminalState", e.terminal(s,
			state.Terminal{Transfer: again, Outcome: state.OutcomeFailed, Reason: "TRANSFER [110] timeout", FTSJob: "job-2", DestCopy: state.CopyGone}), nil, 1)
		if tr := e.get(s, again.ID); tr.DestWritten != "" || tr.State != state.StateFailed {
			e.t.Fatalf("after the copy was deleted: dest_written %q state %s; want none, failed", tr.DestWritten, tr.State)
		}
	}},
	{"PFNRefs/BySourceAndDestination", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		e.clock.Advance(time.Second)
		e.enqueue(s, Req(Alice, 3)) // never submitted: it names no PFN
		ts := e.submit(s, 2, "job-1")
		d1, s2 := ts[0].DestPFN, ts[1].SourcePFN
		if d1 == "" || s2 == "" {
			e.t.Fatalf("submitted transfers without PFNs: %+v", ts)
		}
		got, err := s.PFNRefs(ctx, []string{d1, "file:///src/store/nothing.root", s2, d1, "file:///src" + Req(Alice, 3).SourceLFN})
		if err != nil {
			e.t.Fatalf("PFNRefs: %v", err)
		}
		want := []state.PFNRef{
			{PFN: d1, Role: state.RoleDestination, ID: ts[0].ID, User: Alice, State: state.StateSubmitted},
			{PFN: s2, Role: state.RoleSource, ID: ts[1].ID, User: Alice, State: state.StateSubmitted},
		}
		if len(got) != len(want) {
			e.t.Fatalf("PFNRefs = %+v, want %+v", got, want)
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.PFN != w.PFN || g.Role != w.Role || g.ID != w.ID || g.User != w.User || g.State != w.State {
				e.t.Fatalf("PFNRefs[%d] = %+v, want %+v", i, g, w)
			}
		}
	}},
	{"AbortTransfers/WaitForTheOwner", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		ts := e.claim(s, 1)
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "waiting: transfer X owns the destination", NoPenalty: true, Wait: true}})
		e.ok("AbortTransfers", res, err, 1)
		tr := e.wantState(s, id, state.StateNew)
		if tr.Attempts != 0 || !tr.RetryAfter.Equal(e.clock.Now().Add(Policy.CoolOff)) || !strings.Contains(tr.Reason, "waiting: transfer X") || tr.Owner != "" {
			e.t.Fatalf("waiting: attempts %d retry_after %s reason %q owner %q; want 0, after the cool-off, the reason, no owner",
				tr.Attempts, tr.RetryAfter, tr.Reason, tr.Owner)
		}
		if got := e.claim(s, 1); len(got) != 0 {
			e.t.Fatalf("claimed %v before the cool-off passed", ids(got))
		}
		e.clock.Advance(Policy.CoolOff)
		if got := e.claim(s, 1); len(got) != 1 || got[0].ID != id {
			e.t.Fatalf("after the cool-off: claimed %v, want %s", ids(got), id)
		}
	}},
}
