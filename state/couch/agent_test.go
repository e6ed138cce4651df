package couch_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestStore_InvalidDocuments(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := couchtest.DB(t)
	db := rawDB(t, u)
	// Written before Init installed validate_doc_update, as by an older
	// tool: a transfer with wrong types in every field but in the claim
	// index, and a document with no usable type at all.
	junkID := "0000000000000000000000000000000000000000000000000000000000000000"
	if got := putRaw(t, db, junkID, `{"type":"transfer","user":"alice","state":"new","claim_key":"0",
		"size":"big","priority":"high","source":7,"destination":[],"source_lfn":false,"attempts":"x",
		"created":12,"last_update":{},"history":"none","depends_on":3}`); got != http.StatusCreated {
		t.Fatalf("put junk: HTTP %d", got)
	}
	if got := putRaw(t, db, "stray", `{"type":42,"user":"alice"}`); got != http.StatusCreated {
		t.Fatalf("put stray: HTTP %d", got)
	}
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	s := open(t, u, c, "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 3))

	got, err := statetest.Claim(ctx, s, 10)
	if err != nil {
		t.Fatalf("NewTransfers with an invalid document in the queue: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("claimed %d, want the 3 valid transfers", len(got))
	}
	for _, tr := range got {
		if tr.ID == junkID {
			t.Fatal("claimed the invalid document")
		}
	}
	if _, err := s.Get(ctx, junkID); !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("Get(junk) = %v, want ErrInvalid", err)
	}
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, d := range sum.Invalid {
		reasons[d.ID] = d.Reason
	}
	if len(sum.Invalid) != 2 || reasons[junkID] == "" || reasons["stray"] == "" {
		t.Fatalf("Summary.Invalid = %+v, want the junk transfer and the stray document", sum.Invalid)
	}
	if sum.Total != 3 || sum.ByState[state.StateAcquired] != 3 {
		t.Fatalf("Summary counts %d transfers, %v; want 3 acquired", sum.Total, sum.ByState)
	}
	res, err := s.RequestKill(ctx, []string{junkID, got[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, state.ErrInvalid) || res[1].Err != nil {
		t.Fatalf("RequestKill results %+v, want ErrInvalid for the junk and success for the other", res)
	}
}

func TestStore_ConflictReapplied(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	a := open(t, u, c, "alice", "host:1:a", couch.Options{})
	enqueue(t, a, requests("alice", 2))
	got := claim(t, a, 2)
	// An operator asks to kill the first one: its revision moves on.
	res, err := a.RequestKill(ctx, []string{got[0].ID})
	mustOK(t, res, err)
	res, err = statetest.Commit(ctx, a, []state.Commit{{Transfer: got[0], DestPFN: "d0"}, {Transfer: got[1], DestPFN: "d1"}}, "job-1")
	mustOK(t, res, err)
	t0, err := a.Get(ctx, got[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if t0.State != state.StateSubmitted || !t0.KillRequested || t0.Rev != res[0].Rev {
		t.Fatalf("after a re-applied commit: state %s kill_requested %v rev %s (result rev %s)", t0.State, t0.KillRequested, t0.Rev, res[0].Rev)
	}
}

func TestStore_LeaseTakenOver(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	a := open(t, u, c, "alice", "host:1:a", couch.Options{})
	b := open(t, u, c, "alice", "host:2:b", couch.Options{})
	enqueue(t, a, requests("alice", 1))
	ga, err := statetest.Claim(ctx, a, 1)
	if err != nil || len(ga) != 1 {
		t.Fatalf("a.NewTransfers = %d, %v", len(ga), err)
	}
	c.Add(state.DefaultLeaseTTL + time.Second)
	gb, err := statetest.Claim(ctx, b, 1)
	if err != nil || len(gb) != 1 {
		t.Fatalf("b.NewTransfers after the lease expired = %d, %v", len(gb), err)
	}
	res, err := statetest.Commit(ctx, a, []state.Commit{{Transfer: ga[0]}}, "job-a")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, state.ErrLeaseLost) {
		t.Fatalf("commit by the old owner: %v, want ErrLeaseLost", res[0].Err)
	}
	res, err = statetest.Commit(ctx, b, []state.Commit{{Transfer: gb[0]}}, "job-b")
	mustOK(t, res, err)
	tr, _ := b.Get(ctx, gb[0].ID)
	if tr.FTSJob != "job-b" {
		t.Fatalf("fts_job = %q, want job-b", tr.FTSJob)
	}
}

func TestStore_TransientConflict(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := open(t, newDB(t), c, "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 2))
	got, _ := statetest.Claim(ctx, s, 2)
	res, err := statetest.Commit(ctx, s, []state.Commit{{Transfer: got[0]}, {Transfer: got[1]}}, "job-1")
	mustOK(t, res, err)
	jobs, _ := statetest.Active(ctx, s, "alice")
	ts := jobs[0].Transfers
	// Move both on: one stays submitted (kill requested), one ends.
	res, err = s.RequestKill(ctx, []string{ts[0].ID})
	mustOK(t, res, err)
	res, err = s.SetTerminalState(ctx, []state.Terminal{{Transfer: ts[1], Outcome: state.OutcomeDone, FTSJob: "job-1"}})
	mustOK(t, res, err)
	res, err = s.SetTransientState(ctx, []state.Transient{{Transfer: ts[0], Progress: state.Progress{FTSState: "ACTIVE"}}, {Transfer: ts[1], Progress: state.Progress{FTSState: "ACTIVE"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, state.ErrConflict) || !errors.Is(res[1].Err, state.ErrLeaseLost) {
		t.Fatalf("SetTransientState on stale revisions: %v, %v; want ErrConflict, ErrLeaseLost", res[0].Err, res[1].Err)
	}
	tr, _ := s.Get(ctx, ts[0].ID)
	if tr.Progress == nil || tr.Progress.FTSState != "SUBMITTED" {
		t.Fatalf("a conflicting progress update was written: %+v", tr.Progress)
	}
}
