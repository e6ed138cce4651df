package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

const aliasSite = "T2_XX_Alias"

// withAlias gives w a site aliasSite whose rules map to the source site's
// storage: a request from srcSite to aliasSite with one LFN on both sides
// names one file through two site names.
func (w *world) withAlias() {
	w.t.Helper()
	sites := fmt.Sprintf("%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s//store/./$1\n",
		srcSite, w.src, dstSite, w.dst, aliasSite, w.src)
	w.useSites("alias-sites.yaml", sites)
}

// sameFileRequest is a request whose destination is its own source, through
// aliasSite, and the source's content.
func (w *world) sameFileRequest(i int) (state.Request, []byte) {
	r, data := w.request("self", i, true)
	r.Destination, r.DestinationLFN = aliasSite, r.SourceLFN
	return r, data
}

// TestAgent_SameFileIsNeverSubmitted: a transfer whose resolved source and
// destination PFNs are one file (two site names on one storage, the paths
// spelled differently) fails at once with the class same_file and a reason
// naming both ends; FTS never sees it, and the source is untouched.
func TestAgent_SameFileIsNeverSubmitted(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	w.withAlias()
	r, data := w.sameFileRequest(0)
	good, _ := w.request("good", 0, true)
	w.enqueue([]state.Request{r, good})
	cfg := w.config("agent-1")
	cfg.Overwrite = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed || got.ErrorClass != string(state.ClassSameFile) || got.Attempts != 1 ||
		!strings.Contains(got.Reason, "one file") || !strings.Contains(got.Reason, aliasSite) {
		t.Errorf("same-file transfer: %s class %q after %d attempts (%q), want failed, same_file, at once, naming the sites",
			got.State, got.ErrorClass, got.Attempts, got.Reason)
	}
	if d := w.get(good.ID()); d.State != state.StateDone {
		t.Errorf("the other transfer: %s %q, want done", d.State, d.Reason)
	}
	if sub := submissionsByTransfer(w.sim.Files()); len(sub[r.ID()]) != 0 {
		t.Errorf("the same-file transfer was submitted to FTS %d times", len(sub[r.ID()]))
	}
	if b, err := os.ReadFile(w.srcPath(r)); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the source changed or is gone: %d bytes, %v", len(b), err)
	}
}

// TestAgent_CleanupNeverDeletesTheSource: a transfer submitted with its
// source as its destination (as by an earlier version, with --overwrite)
// fails in FTS after url-copy started; its cleanup asks to delete the
// destination, which is the source: the deleter refuses, the source stays,
// the history says so, and the transfer, back in the queue, then fails as
// same_file without another submission.
func TestAgent_CleanupNeverDeletesTheSource(t *testing.T) {
	w := newWorld(t, ftstest.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	w.withAlias()
	r, data := w.sameFileRequest(0)
	w.enqueue([]state.Request{r})
	ctx := context.Background()
	past := w.open("agent-past")
	claimed, err := statetest.Claim(ctx, past, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	// the earlier version recorded its ownership of the destination, so
	// that the deletion rule lets the cleanup through to the deleter's
	// own last guard
	_, err = statetest.Prepare(ctx, past, claimed, "sid-past")
	must(t, err)
	claimed[0], err = past.Get(ctx, claimed[0].ID)
	must(t, err)
	pfn := "file://" + w.srcPath(r)
	job, err := w.client.Submit(ctx, fts.Submission{Params: fts.SubmitParams{Overwrite: true, Retry: -1},
		Files: []fts.SubmitFile{{Sources: []string{pfn}, Destinations: []string{pfn}, Metadata: map[string]string{"transfer_id": r.ID()}}}})
	must(t, err)
	res, err := statetest.Commit(ctx, past, []state.Commit{{Transfer: claimed[0], SourcePFN: pfn, DestPFN: pfn}}, job)
	must(t, err)
	must(t, res[0].Err)
	w.clk.Advance(16 * time.Minute) // the past agent's lease

	must(t, w.agent(w.config("agent-1"), nil).Run(ctx))
	got := w.get(r.ID())
	if got.State != state.StateFailed || got.ErrorClass != string(state.ClassSameFile) {
		t.Errorf("transfer: %s class %q (%q), want failed as same_file", got.State, got.ErrorClass, got.Reason)
	}
	if b, err := os.ReadFile(w.srcPath(r)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the source was deleted or changed: %d bytes, %v", len(b), err)
	}
	refused := false
	for _, h := range got.History {
		refused = refused || strings.Contains(h.Reason, "did not delete "+pfn) && strings.Contains(h.Reason, "source")
	}
	if !refused {
		t.Errorf("no history entry says the source was not deleted: %+v", got.History)
	}
	if n := len(w.sim.Files()); n != 1 {
		t.Errorf("%d files in FTS, want only the one submitted before the run", n)
	}
}

// TestAgent_DeletionsInHistory: the deletion of a failed transfer's
// destination copy is written into its history: what was deleted, why and
// with what result.
func TestAgent_DeletionsInHistory(t *testing.T) {
	w := newWorld(t, ftstest.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [5] Input/output error: partial write"}})
	r, _ := w.request("partial", 0, true)
	w.writeFile(w.dstPath(r), []byte("partial"))
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Overwrite = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed {
		t.Fatalf("transfer: %s %q, want failed", got.State, got.Reason)
	}
	pfn := "file://" + w.dstPath(r)
	n := 0
	for _, h := range got.History {
		if strings.Contains(h.Reason, pfn) && strings.Contains(h.Reason, "failed after FTS started copying") &&
			(strings.HasPrefix(h.Reason, "deleted the destination copy") || strings.Contains(h.Reason, "was already gone")) {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no history entry of the deletion of %s: %+v", pfn, got.History)
	}
	if _, err := os.Stat(w.dstPath(r)); !os.IsNotExist(err) {
		t.Errorf("the destination copy is still there: %v", err)
	}
}

// TestAgent_SourceThroughALinkedRoot is issue 43's case 5: the destination
// site's root is a symbolic link to the source site's root, and a request
// with one LFN on both sides, a wrong checksum and --overwrite names the
// source through the link. It fails at once as same_file, FTS never sees
// it, and the source is neither deleted nor changed.
func TestAgent_SourceThroughALinkedRoot(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	must(t, os.Symlink(w.src, w.dst))
	r, data := w.request("linked", 0, true)
	r.DestinationLFN = r.SourceLFN
	r.Checksums = map[string]string{"adler32": "00000001"}
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Overwrite = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed || got.ErrorClass != string(state.ClassSameFile) {
		t.Errorf("transfer: %s class %q (%q), want failed as same_file", got.State, got.ErrorClass, got.Reason)
	}
	if n := len(w.sim.Files()); n != 0 {
		t.Errorf("%d files submitted to FTS, want none", n)
	}
	if b, err := os.ReadFile(w.srcPath(r)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the source was deleted or changed: %d bytes, %v", len(b), err)
	}
}
