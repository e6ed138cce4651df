package statetest

import (
	"errors"
	"time"

	"github.com/asyncstageout/aso/state"
)

var enqueueCases = []testCase{
	{"Enqueue/StoresNewTransfers", func(e *env) {
		s := e.store(Alice, "agent-a")
		r := Req(Alice, 1)
		r.Priority = 7
		r.Checksums = map[string]string{"ADLER32": "0A1B2C3D"}
		id := e.enqueue(s, r)[0]
		if id != r.ID() {
			e.t.Fatalf("ID %s, want %s", id, r.ID())
		}
		tr := e.wantState(s, id, state.StateNew)
		if tr.Rev == "" || tr.Type != state.DocType || tr.User != Alice || tr.Priority != 7 || tr.Attempts != 0 || tr.Size != r.Size {
			e.t.Fatalf("stored %+v", tr)
		}
		if got, want := tr.Checksum(), "0a1b2c3d"; got != want {
			e.t.Fatalf("adler32 %q, want %q (normalised to lower case)", got, want)
		}
		if !tr.Created.Equal(Start) || !tr.LastUpdate.Equal(Start) {
			e.t.Fatalf("created %s, last_update %s; want %s", tr.Created, tr.LastUpdate, Start)
		}
		if len(tr.History) != 1 || tr.History[0].To != state.StateNew {
			e.t.Fatalf("history %+v, want one entry to new", tr.History)
		}
	}},
	{"Enqueue/Idempotent", func(e *env) {
		s := e.store(Alice, "agent-a")
		first := e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		before := []state.Transfer{e.get(s, first[0]), e.get(s, first[1])}
		e.clock.Advance(time.Minute)
		res, err := s.Enqueue(ctx, []state.Request{Req(Alice, 1), Req(Alice, 3), Req(Alice, 2), Req(Alice, 3)})
		if err != nil {
			e.t.Fatal(err)
		}
		want := []state.EnqueueStatus{state.AlreadyQueued, state.Stored, state.AlreadyQueued, state.AlreadyQueued}
		for i, r := range res {
			if r.Status != want[i] || r.Err != nil {
				e.t.Fatalf("item %d: status %q err %v, want %q", i, r.Status, r.Err, want[i])
			}
		}
		if res[0].ID != first[0] || res[2].ID != first[1] || res[1].ID != ReqID(Alice, 3) {
			e.t.Fatalf("IDs %+v", res)
		}
		for _, b := range before {
			e.unchanged(s, b)
		}
		e.wantState(s, res[1].ID, state.StateNew)
	}},
	{"Enqueue/RejectsInvalidPerItem", func(e *env) {
		s := e.store(Alice, "agent-a")
		noUser := Req("", 2)
		relative := Req(Alice, 3)
		relative.SourceLFN = "store/x.root"
		badSum := Req(Alice, 4)
		badSum.Checksums = map[string]string{"adler32": "xyz"}
		dotdot := Req(Alice, 5)
		dotdot.DestinationLFN = "/store/../etc/passwd"
		reqs := []state.Request{Req(Alice, 1), noUser, relative, badSum, dotdot, Req(Alice, 6)}
		fields := []string{"", "user", "source_lfn", "checksums.adler32", "destination_lfn", ""}
		res, err := s.Enqueue(ctx, reqs)
		if err != nil {
			e.t.Fatal(err)
		}
		for i, r := range res {
			if fields[i] == "" {
				if r.Status != state.Stored || r.Err != nil {
					e.t.Fatalf("valid item %d: %q %v", i, r.Status, r.Err)
				}
				e.wantState(s, reqs[i].ID(), state.StateNew)
				continue
			}
			var ve *state.ValidationError
			if r.Status != state.Rejected || !errors.As(r.Err, &ve) || ve.Field != fields[i] {
				e.t.Fatalf("item %d: status %q err %v, want rejected naming %s", i, r.Status, r.Err, fields[i])
			}
			if _, err := s.Get(ctx, reqs[i].ID()); !errors.Is(err, state.ErrNotFound) {
				e.t.Fatalf("rejected item %d was stored (Get: %v)", i, err)
			}
		}
	}},
}
