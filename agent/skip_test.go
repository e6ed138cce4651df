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

func (d *skippingDeleter) Delete(ctx context.Context, urls []string) ([]srm.DeleteResult, error) {
	if d.skips <= 0 {
		return d.real.Delete(ctx, urls)
	}
	d.skips--
	err := fmt.Errorf("srm: file:// timed out on file:///elsewhere: %w", srm.ErrTimeout)
	out := make([]srm.DeleteResult, len(urls))
	for i, u := range urls {
		out[i] = srm.DeleteResult{URL: u, Status: srm.StatusSkipped, Message: "not attempted: " + err.Error(), Err: err}
	}
	return out, err
}

// TestAgent_SkippedDeletionIsNoAttempt: the deletion of a failed
// transfer's copy is skipped for more passes than MaxDeleteAttempts,
// because another URL on its storage hung each time (found by the chaos
// scenario gfal-rm-hangs). Skips are not attempts: the copy is deleted once
// gfal-rm gets to it, and the transfer fails without a copy left.
func TestAgent_SkippedDeletionIsNoAttempt(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("nosource", 0, false)
	w.writeFile(w.dstPath(r), []byte("stale partial copy"))
	w.enqueue([]state.Request{r})
	del := &skippingDeleter{real: w.deleter, skips: agent.MaxDeleteAttempts + 1}
	a, err := agent.New(w.config("agent-1"), w.open("agent-1"), w.client, w.sites, del, w.log)
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
