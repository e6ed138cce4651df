package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_FinishedFileNotDeletedByALaterRequest: a transfer finished and
// its file is at the destination; a later request with another source LFN,
// a missing source and the same destination fails. Its destination copy
// is not its own (its attempt failed on the source side, and the finished
// transfer owns the destination): the finished transfer's file stays, the
// finished transfer stays done, and the failure says the file was left in
// place and why.
func TestAgent_FinishedFileNotDeletedByALaterRequest(t *testing.T) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) {
			w := world(t, ftstest.Options{TransferTime: time.Minute})
			first, data := w.request("first", 0, true)
			w.enqueue([]state.Request{first})
			must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
			if got := w.get(first.ID()); got.State != state.StateDone || got.DestOwnedSince.IsZero() {
				t.Fatalf("first transfer %s %q, dest_owned_since %s: want done, its ownership recorded", got.State, got.Reason, got.DestOwnedSince)
			}
			later, _ := w.request("later", 0, false) // no source file
			later.DestinationLFN = first.DestinationLFN
			later.Checksums = map[string]string{"adler32": "0badf00d"}
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
}

// TestAgent_HandPutFileNotDeleted: a file put at the destination by hand
// before aso ever ran (a physicist's only copy) is not deleted by a
// request for it whose source is missing: nothing in aso's records says
// this transfer wrote it.
func TestAgent_HandPutFileNotDeleted(t *testing.T) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) {
			w := world(t, ftstest.Options{TransferTime: time.Minute})
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
