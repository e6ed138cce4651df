package statetest

import (
	"errors"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// ownerEnqueueCases state what Enqueue does with a new request for a
// destination another transfer owns or owned (issue 43, section 2).
var ownerEnqueueCases = []testCase{
	{"EnqueueOwner/DoneOwnerOtherFileRefusedUnlessReplaced", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(s, Req(Alice, 1))
		e.ownedFinish(s, state.OutcomeDone)
		bob := onto(Req(Bob, 2), Req(Alice, 1)) // another adler32
		c := e.enqueueOne(b, bob, state.Rejected)
		var oe *state.OwnerError
		if !errors.As(c.Err, &oe) || oe.Owner.ID != ReqID(Alice, 1) || oe.Owner.User != Alice || oe.Owner.State != state.StateDone ||
			!strings.Contains(c.Err.Error(), ReqID(Alice, 1)) {
			e.t.Fatalf("refusal %v (%T), want an OwnerError naming %s (alice, done)", c.Err, c.Err, ReqID(Alice, 1))
		}
		if _, err := b.Get(ctx, bob.ID()); !errors.Is(err, state.ErrNotFound) {
			e.t.Fatalf("refused request: Get says %v, want not found (nothing stored)", err)
		}
		bob.Replace = true
		c = e.enqueueOne(b, bob, state.Stored)
		e.wantOwner(b, c, state.OwnerReplaced, ReqID(Alice, 1), "replaces transfer "+ReqID(Alice, 1))
		e.wantSuperseded(s, ReqID(Alice, 1), state.StateDone, bob.ID(), state.ReplacedByPrefix)
		// enqueued again: already queued, not refused, and recorded once
		e.enqueueOne(b, onto(Req(Bob, 2), Req(Alice, 1)), state.AlreadyQueued)
		e.wantSuperseded(s, ReqID(Alice, 1), state.StateDone, bob.ID(), state.ReplacedByPrefix)
		// a second replacement before the first is done: the owner keeps
		// the record of the first
		carol := onto(Req(Bob, 3), Req(Alice, 1))
		carol.Replace = true
		c = e.enqueueOne(b, carol, state.Stored)
		e.wantOwner(b, c, state.OwnerReplaced, ReqID(Alice, 1), "replaces transfer "+ReqID(Alice, 1))
		e.wantSuperseded(s, ReqID(Alice, 1), state.StateDone, bob.ID(), state.ReplacedByPrefix)
	}},
	{"EnqueueOwner/DoneOwnerSameFileAlreadyThere", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(s, Req(Alice, 1))
		e.ownedFinish(s, state.OutcomeDone)
		bob := onto(Req(Bob, 2), Req(Alice, 1))
		bob.Checksums, bob.Size = map[string]string{"ADLER32": strings.ToUpper(Req(Alice, 1).Checksums["adler32"])}, Req(Alice, 1).Size
		c := e.enqueueOne(b, bob, state.Stored)
		e.wantOwner(b, c, state.OwnerDoneSame, ReqID(Alice, 1), "already there")
	}},
	{"EnqueueOwner/ActiveOwnerWaits", func(e *env) {
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(s, Req(Alice, 1))
		res, err := Prepare(ctx, s, e.claim(s, 1), "sid-1")
		e.ok("PrepareSubmits", res, err, 1)
		c := e.enqueueOne(b, onto(Req(Bob, 2), Req(Alice, 1)), state.Stored)
		e.wantOwner(b, c, state.OwnerActive, ReqID(Alice, 1), "waits for transfer "+ReqID(Alice, 1))
		// a transfer that has not recorded its ownership owns nothing yet
		c = e.enqueueOne(b, onto(Req(Bob, 3), Req(Bob, 4)), state.Stored)
		e.enqueueOne(s, onto(Req(Alice, 5), Req(Bob, 4)), state.Stored)
		if c.Owner.Kind != state.OwnerNone {
			e.t.Fatalf("first request of a destination: %+v, want no owner", c.Owner)
		}
	}},
	{"EnqueueOwner/FailedOrKilledOwnerSuperseded", func(e *env) {
		for i, o := range []state.Outcome{state.OutcomeFailed, state.OutcomeKilled} {
			s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
			e.enqueue(s, Req(Alice, 10+i))
			e.ownedFinish(s, o)
			c := e.enqueueOne(b, onto(Req(Bob, 20+i), Req(Alice, 10+i)), state.Stored)
			e.wantOwner(b, c, state.OwnerSuperseded, ReqID(Alice, 10+i), "supersedes transfer "+ReqID(Alice, 10+i))
			e.wantSuperseded(s, ReqID(Alice, 10+i), state.State(o), c.ID, state.SupersededByPrefix)
		}
	}},
	{"EnqueueOwner/SupersededOwnerNotSupersededAgain", func(e *env) {
		// A failed owner superseded once names only its first successor:
		// the next request for the destination meets no owner, since the
		// first successor has not recorded its ownership yet.
		s, b := e.store(Alice, "agent-a"), e.store(Bob, "agent-b")
		e.enqueue(s, Req(Alice, 1))
		e.ownedFinish(s, state.OutcomeFailed)
		first := e.enqueueOne(b, onto(Req(Bob, 2), Req(Alice, 1)), state.Stored)
		c := e.enqueueOne(b, onto(Req(Bob, 3), Req(Alice, 1)), state.Stored)
		if c.Owner.Kind != state.OwnerNone {
			e.t.Fatalf("request after the supersession: %+v, want no owner", c.Owner)
		}
		e.wantSuperseded(s, ReqID(Alice, 1), state.StateFailed, first.ID, state.SupersededByPrefix)
		// a retry of the superseded transfer clears the record
		res, err := s.Retry(ctx, []string{ReqID(Alice, 1)})
		e.ok("Retry", res, err, 1)
		if tr := e.get(s, ReqID(Alice, 1)); tr.SupersededBy != "" {
			e.t.Fatalf("retried: superseded_by %q, want none", tr.SupersededBy)
		}
	}},
}

// onto is r with the destination of to.
func onto(r, to state.Request) state.Request {
	r.Destination, r.DestinationLFN = to.Destination, to.DestinationLFN
	return r
}
