package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestAgent_EndToEndCouchDB runs the end-to-end scenario of
// TestAgent_EndToEnd on a CouchDB database prepared like `aso init` does.
func TestAgent_EndToEndCouchDB(t *testing.T) {
	endToEnd(t, newCouchWorld(t, endToEndSim))
}

// newCouchWorld builds a world on a CouchDB database prepared like `aso
// init` does.
func newCouchWorld(t testing.TB, simOpts ftstest.Options) *world {
	t.Helper()
	u := couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("init the database: %v", err)
	}
	return newWorldOn(t, simOpts, func(cfg state.Config) (state.Store, error) {
		return couch.Open(context.Background(), couch.Options{URL: u}, cfg)
	})
}

// TestAgent_NoClaimPastTheEndOfTheQueue: a claim that took the last due
// transfers of the queue, a full batch, is not followed by another in the
// same pass (the store said it saw the end of the queue: Claimed.End),
// and the pass submits all it holds, the short job too.
func TestAgent_NoClaimPastTheEndOfTheQueue(t *testing.T) {
	w := newCouchWorld(t, ftstest.Options{})
	cfg := w.config("agent-1")
	cfg.Once = true
	w.goodRequests(2 * cfg.BatchSize)
	var mu sync.Mutex
	var claims []int
	store := state.Wrap(w.open("agent-1"), state.Hooks{After: func(_ context.Context, op state.Op, c state.Call) {
		if op == state.OpNewTransfers {
			mu.Lock()
			claims = append(claims, c.Items)
			mu.Unlock()
		}
	}})
	must(t, w.agent(cfg, store).Run(context.Background()))
	if want := []int{cfg.BatchSize, cfg.BatchSize}; !slices.Equal(claims, want) {
		t.Errorf("the pass claimed %v transfers, want %v: no claim after the one that saw the end of the queue", claims, want)
	}
	if got := len(w.sim.Files()); got != 2*cfg.BatchSize {
		t.Errorf("the simulator holds %d files after the pass, want %d: every claimed transfer submitted", got, 2*cfg.BatchSize)
	}
}
