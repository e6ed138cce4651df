package agent_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestAgent_UnconfirmedClaimsAreNoDrain: on a cluster whose coordinator
// answers the first claims 202 and loses them (the writes never reach a
// quorum, as with two coordinators racing), the agent's first claim gets
// nothing while every transfer is still due. It must not take that for a
// drained queue: it claims again, and every transfer ends done.
func TestAgent_UnconfirmedClaimsAreNoDrain(t *testing.T) {
	u := couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("init the database: %v", err)
	}
	cl := couchtest.NewCluster(t, u, time.Minute)
	const n = 6
	var lost atomic.Int32
	cl.Lost = func(doc map[string]any) bool {
		return doc["state"] == "acquired" && lost.Add(1) <= n // the first claim of each
	}
	w := newWorldOn(t, ftstest.Options{}, func(cfg state.Config) (state.Store, error) {
		return couch.Open(context.Background(), couch.Options{URL: cl.URL(0)}, cfg)
	})
	reqs := w.goodRequests(n)
	must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
	if lost.Load() < n {
		t.Fatalf("the proxy lost %d claims: the test tests nothing", lost.Load())
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s after the run (%q), want done: the agent took unconfirmed claims for a drained queue", r.ID()[:8], got.State, got.Reason)
		}
	}
}
