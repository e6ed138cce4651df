package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestAgent_FinishedFileNotDeletedByALaterRequest: a transfer finished and
// its file is at the destination; a later request with another source LFN,
// a missing source and the same destination fails. Its destination copy
// is not its own (its attempt failed on the source side, and the finished
// transfer owns the destination): the finished transfer's file stays, the
// finished transfer stays done, and the failure says the file was left in
// place and why.
func TestAgent_FinishedFileNotDeletedByALaterRequest(t *testing.T) {
	onEachWorld(t, ftstest.Options{TransferTime: time.Minute}, func(t *testing.T, w *world) {
		first, data := w.request("first", 0, true)
		w.enqueue([]state.Request{first})
		must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
		if got := w.get(first.ID()); got.State != state.StateDone || got.DestOwnedSince.IsZero() {
			t.Fatalf("first transfer %s %q, dest_owned_since %s: want done, its ownership recorded", got.State, got.Reason, got.DestOwnedSince)
		}
		later, _ := w.request("later", 0, false) // no source file
		later.DestinationLFN = first.DestinationLFN
		later.Checksums = map[string]string{"adler32": "0badf00d"}
		later.Replace = true // enqueue refuses another file for a done owner's destination otherwise
		w.enqueue([]state.Request{later})
		must(t, w.agent(w.config("agent-2"), nil).Run(context.Background()))

		if b, err := os.ReadFile(w.dstPath(first)); err != nil || string(b) != string(data) {
			t.Fatalf("the finished transfer's file was deleted or changed: %v", err)
		}
		if got := w.get(first.ID()); got.State != state.StateDone {
			t.Errorf("first transfer %s, want still done", got.State)
		}
		got := w.get(later.ID())
		if got.State != state.StateFailed || !strings.Contains(got.Reason, "left in place: ") {
			t.Errorf("later transfer %s %q, want failed, saying its destination was left in place", got.State, got.Reason)
		}
		wantHistory(t, got, "left in place: ", w.dstPath(first))
	})
}

// TestAgent_HandPutFileNotDeleted: a file put at the destination by hand
// before aso ever ran (a physicist's only copy) is not deleted by a
// request for it whose source is missing: nothing in aso's records says
// this transfer wrote it.
func TestAgent_HandPutFileNotDeleted(t *testing.T) {
	onEachWorld(t, ftstest.Options{TransferTime: time.Minute}, func(t *testing.T, w *world) {
		r, _ := w.request("only-copy", 0, false)
		r.Checksums = map[string]string{"adler32": "0badf00d"}
		w.writeFile(w.dstPath(r), []byte("the physicist's only copy"))
		w.enqueue([]state.Request{r})
		must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
		if b, err := os.ReadFile(w.dstPath(r)); err != nil || string(b) != "the physicist's only copy" {
			t.Fatalf("the file put there by hand was deleted or changed: %v", err)
		}
		got := w.get(r.ID())
		if got.State != state.StateFailed || !strings.Contains(got.Reason, "left in place: no attempt of this transfer began writing there") {
			t.Errorf("%s %q, want failed, saying the file was left in place: no attempt wrote there", got.State, got.Reason)
		}
		wantHistory(t, got, "left in place: ", w.dstPath(r))
	})
}

// wantHistory fails unless an entry of t's history holds each of parts.
func wantHistory(t *testing.T, tr state.Transfer, parts ...string) {
	t.Helper()
	for _, h := range tr.History {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(h.Reason, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("no history entry of %s holds %q: %+v", tr.ID, parts, tr.History)
}

// onEachWorld runs f on a world of each backend (worlds), with opts.
func onEachWorld(t *testing.T, opts ftstest.Options, f func(*testing.T, *world)) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) { f(t, world(t, opts)) })
	}
}

// TestAgent_TwoReleasedOwnersDoNotWaitForEachOther: two transfers for one
// destination that both recorded their ownership in an earlier submission
// and are back in the queue (a lost job, a refusal, a retry) are claimed in
// one pass: the one that recorded it first is submitted, the other waits
// for it. Neither waits for the other forever.
func TestAgent_TwoReleasedOwnersDoNotWaitForEachOther(t *testing.T) {
	onEachWorld(t, ftstest.Options{TransferTime: 10 * time.Minute}, func(t *testing.T, w *world) {
		ctx := context.Background()
		a, data := w.request("one", 0, true)
		b, _ := w.request("two", 0, false)
		b.DestinationLFN, b.Size, b.Checksums = a.DestinationLFN, a.Size, a.Checksums
		w.writeFile(w.srcPath(b), data)
		w.enqueue([]state.Request{b, a}) // b is claimed first
		s := w.open("earlier-agent")
		ts, err := statetest.Claim(ctx, s, 2)
		if err != nil || len(ts) != 2 {
			t.Fatalf("claim: %v, %v", ts, err)
		}
		for _, id := range []string{a.ID(), b.ID()} { // a records its ownership first
			w.clk.Advance(time.Second)
			res, err := statetest.Prepare(ctx, s, []state.Transfer{w.get(id)}, "sid-"+id[:8])
			if err != nil || res[0].Err != nil {
				t.Fatalf("prepare %s: %v, %v", id[:8], res, err)
			}
		}
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: w.get(a.ID()), NoPenalty: true, Reason: "FTS lost the job"},
			{Transfer: w.get(b.ID()), NoPenalty: true, Reason: "FTS lost the job"}})
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("release: %v, %v", res, err)
		}
		cfg := w.config("agent-1")
		cfg.Once = true
		must(t, w.agent(cfg, nil).Run(ctx))
		ta, tb := w.get(a.ID()), w.get(b.ID())
		if n := len(w.sim.Files()); n != 1 || ta.State != state.StateSubmitted || tb.State != state.StateNew ||
			!strings.Contains(tb.Reason, "waiting: transfer "+a.ID()) || tb.DestOwnedSince.IsZero() {
			t.Fatalf("%d files submitted; first owner %s %q; second %s %q (owned since %s); want the first submitted, the second waiting for it, still recorded as an owner",
				n, ta.State, ta.Reason, tb.State, tb.Reason, tb.DestOwnedSince)
		}
	})
}

// TestAgent_OneActiveOwnerPerDestination: two requests for one destination
// (other source LFNs, the same file) are claimed in one pass: only the
// first is submitted; the other waits, back in the queue without an
// attempt counted, its reason naming the first. Once the first is done,
// the other finds the same file there and is recorded done "already
// there": FTS is asked for one copy only.
func TestAgent_OneActiveOwnerPerDestination(t *testing.T) {
	onEachWorld(t, ftstest.Options{TransferTime: 10 * time.Minute}, func(t *testing.T, w *world) {
		a, data := w.request("one", 0, true)
		b, _ := w.request("two", 0, false)
		b.DestinationLFN = a.DestinationLFN
		b.Size, b.Checksums = a.Size, a.Checksums
		w.writeFile(w.srcPath(b), data)
		w.enqueue([]state.Request{a, b})
		cfg := w.config("agent-1")
		cfg.Once = true
		must(t, w.agent(cfg, nil).Run(context.Background()))

		if n := len(w.sim.Files()); n != 1 {
			t.Fatalf("%d files submitted to FTS in the first pass, want 1", n)
		}
		ta, tb := w.get(a.ID()), w.get(b.ID())
		owner, waiter := ta, tb
		if tb.State == state.StateSubmitted {
			owner, waiter = tb, ta
		}
		if owner.State != state.StateSubmitted || waiter.State != state.StateNew || waiter.Attempts != 0 ||
			!strings.Contains(waiter.Reason, "waiting: transfer "+owner.ID) || !waiter.RetryAfter.After(w.clk.Now()) {
			t.Fatalf("after one pass: %s %s; %s %s %q after %d attempts, retry after %s; want one submitted, the other waiting for it",
				owner.ID, owner.State, waiter.ID, waiter.State, waiter.Reason, waiter.Attempts, waiter.RetryAfter)
		}

		cfg.Once = false
		must(t, w.agent(cfg, nil).Run(context.Background()))
		if got := w.get(owner.ID); got.State != state.StateDone {
			t.Errorf("owner %s %q, want done", got.State, got.Reason)
		}
		got := w.get(waiter.ID)
		if got.State != state.StateDone || !strings.Contains(got.Reason, "already there: transfer "+owner.ID) {
			t.Errorf("waiter %s %q, want done, already there", got.State, got.Reason)
		}
		if n := len(w.sim.Files()); n != 1 {
			t.Errorf("%d files submitted to FTS, want 1", n)
		}
		if b, err := os.ReadFile(w.dstPath(a)); err != nil || string(b) != string(data) {
			t.Errorf("the file at the destination is not the one copied: %v", err)
		}
	})
}
