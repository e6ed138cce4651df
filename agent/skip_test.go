package agent_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// skippingDeleter reports every URL SKIPPED for its first calls (gfal-rm
// never reached them: a URL before them on their storage hung), then
// deletes for real.
type skippingDeleter struct {
	real  agent.Deleter
	skips int
}

func (d *skippingDeleter) Delete(ctx context.Context, targets []srm.Target) ([]srm.DeleteResult, error) {
	if d.skips <= 0 {
		return d.real.Delete(ctx, targets)
	}
	d.skips--
	err := fmt.Errorf("srm: file:// timed out on file:///elsewhere: %w", srm.ErrTimeout)
	out := make([]srm.DeleteResult, len(targets))
	for i, tg := range targets {
		out[i] = srm.DeleteResult{URL: tg.URL, Status: srm.StatusSkipped, Message: "not attempted: " + err.Error(), Err: err}
	}
	return out, err
}

// TestAgent_SkippedDeletionIsNoAttempt: the deletion of a failed
// transfer's copy is skipped for more passes than MaxDeleteAttempts,
// because another URL on its storage hung each time (found by the chaos
// scenario gfal-rm-hangs). Skips are not attempts: the copy is deleted once
// gfal-rm gets to it, and the transfer fails without a copy left.
func TestAgent_SkippedDeletionIsNoAttempt(t *testing.T) {
	w := partialCopyWorld(t)
	r, _ := w.request("partial", 0, true)
	w.writeFile(w.dstPath(r), []byte("stale partial copy"))
	w.enqueue([]state.Request{r})
	del := &skippingDeleter{real: w.deleter, skips: agent.MaxDeleteAttempts + 1}
	a, err := agent.New(overwriting(w.config("agent-1")), w.open("agent-1"), w.client, w.sites, del, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed || strings.Contains(got.Reason, "not deleted") {
		t.Errorf("%s (%q), want failed with the copy deleted", got.State, got.Reason)
	}
	if _, err := os.Stat(w.dstPath(r)); !os.IsNotExist(err) {
		t.Errorf("the stale copy is still there (%v)", err)
	}
	if del.skips != 0 {
		t.Errorf("%d skips left: the deletion was not retried after its skips", del.skips)
	}
}

// oneAPassDeleter deletes the first URL of each call for real and reports
// the others SKIPPED, as gfal-rm does when the URL after the first hangs.
type oneAPassDeleter struct{ real agent.Deleter }

func (d *oneAPassDeleter) Delete(ctx context.Context, targets []srm.Target) ([]srm.DeleteResult, error) {
	out, err := d.real.Delete(ctx, targets[:1])
	if err != nil {
		return out, err
	}
	skip := fmt.Errorf("srm: file:// timed out on %s: %w", targets[0].URL, srm.ErrTimeout)
	for _, tg := range targets[1:] {
		out = append(out, srm.DeleteResult{URL: tg.URL, Status: srm.StatusSkipped, Message: "not attempted: " + skip.Error(), Err: skip})
	}
	return out, skip
}

// TestAgent_LongDeletionQueueWorkedThrough: gfal-rm gets through one URL a
// pass, for more passes than MaxDeleteSkips + MaxDeleteAttempts; the URLs
// waiting behind are not charged while it makes progress, and every copy is
// deleted in the end.
func TestAgent_LongDeletionQueueWorkedThrough(t *testing.T) {
	w := partialCopyWorld(t)
	n := agent.MaxDeleteSkips + agent.MaxDeleteAttempts + 3
	var reqs []state.Request
	for i := range n {
		r, _ := w.request("queue", i, true)
		w.writeFile(w.dstPath(r), []byte("stale partial copy"))
		reqs = append(reqs, r)
	}
	w.enqueue(reqs)
	a, err := agent.New(overwriting(w.config("agent-1")), w.open("agent-1"), w.client, w.sites, &oneAPassDeleter{real: w.deleter}, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	for i, r := range reqs {
		got := w.get(r.ID())
		if got.State != state.StateFailed || strings.Contains(got.Reason, "not deleted") {
			t.Errorf("transfer %d: %s (%q), want failed with the copy deleted", i, got.State, got.Reason)
		}
		if _, err := os.Stat(w.dstPath(r)); !os.IsNotExist(err) {
			t.Errorf("transfer %d: the stale copy is still there (%v)", i, err)
		}
	}
}

// partialCopyWorld is a world whose FTS fails every attempt in the
// transfer phase, after url-copy started (FTS's "TRANSFER [5]" write
// error): the copy at the destination is the attempt's own to delete.
// With overwrite (overwriting), FTS copies over a file already there, as
// these tests put one to stand for the partial copy.
func partialCopyWorld(t *testing.T) *world {
	t.Helper()
	return newWorld(t, ftstest.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [5] Input/output error: partial write"}})
}

// overwriting is cfg with overwrite set.
func overwriting(cfg agent.Config) agent.Config {
	cfg.Overwrite = true
	return cfg
}
