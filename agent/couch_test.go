package agent_test

import (
	"context"
	"slices"
	"strings"
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
	u := couchDB(t)
	return newWorldOn(t, simOpts, func(cfg state.Config) (state.Store, error) {
		return couch.Open(context.Background(), couch.Options{URL: u}, cfg)
	})
}

// couchDB is a fresh database of the test server, prepared like `aso
// init` does.
func couchDB(t testing.TB) string {
	t.Helper()
	u := couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("init the database: %v", err)
	}
	return u
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
	cl := couchtest.NewCluster(t, couchDB(t), time.Minute)
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

// TestAgent_RacingEnqueuesOnACluster: two producers enqueue at once,
// through the two coordinators of a CouchDB cluster whose view of
// destinations lags behind the writes, requests of two users for one
// destination (other source LFNs, the same file). Neither enqueue sees the
// other, so both are stored without an owner. Then the two users' agents
// check the owners at the same moment, before either has recorded its
// ownership (the test holds each agent, once its first read of the owners
// has its answer, until the other's has too), so both pass and both
// record it. The second check,
// after the record and before FTS, lets exactly one through: FTS is asked
// for one copy; the other waits, its reason naming the first, its record
// of ownership cleared and no attempt counted. Once the first is done, the
// other is recorded done, already there. Each agent reads the owners twice
// in its first pass, whatever the number of transfers.
func TestAgent_RacingEnqueuesOnACluster(t *testing.T) {
	ctx := context.Background()
	u := couchDB(t)
	cl := couchtest.NewCluster(t, u, time.Minute)
	w := newWorldOn(t, ftstest.Options{TransferTime: 10 * time.Minute}, func(cfg state.Config) (state.Store, error) {
		return couch.Open(ctx, couch.Options{URL: u}, cfg)
	})
	open := func(front int, user, owner string) state.Store {
		s, err := couch.Open(ctx, couch.Options{URL: cl.URL(front)}, state.Config{Agent: state.Agent{User: user, Owner: owner},
			Policy: state.Policy{CoolOff: 5 * time.Minute, MaxAttempts: 3, LeaseTTL: 15 * time.Minute}, Now: w.clk.Now})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, data := w.request("race", 0, true)
	b := a
	b.User, b.SourceLFN = "bob", "/store/temp/user/bob/race_0000.root"
	w.writeFile(w.srcPath(b), data)
	reqs := []state.Request{a, b}

	// each front has answered the destination's owners (none) and gives
	// that answer again while the enqueues race
	producers := []state.Store{open(0, a.User, "producer-0"), open(1, b.User, "producer-1")}
	for _, p := range producers {
		_, err := p.DestinationRefs(ctx, []state.Destination{{Site: a.Destination, LFN: a.DestinationLFN}})
		must(t, err)
	}
	cl.ViewLag.Store(int64(time.Hour))
	var wg sync.WaitGroup
	res := make([][]state.EnqueueResult, 2)
	errs := make([]error, 2)
	for i := range reqs {
		wg.Go(func() { res[i], errs[i] = producers[i].Enqueue(ctx, reqs[i:i+1]) })
	}
	wg.Wait()
	for i := range reqs {
		if errs[i] != nil || len(res[i]) != 1 || res[i][0].Status != state.Stored || res[i][0].Owner.Kind != state.OwnerNone {
			t.Fatalf("enqueue %d: %+v, %v; want stored, no owner seen", i, res[i], errs[i])
		}
	}
	cl.ViewLag.Store(0)

	// the agents of both users, one on each front, check the owners at once
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	reads := make([]atomic.Int32, 2)
	prepared := make([]atomic.Int32, 2)
	stores := make([]state.AgentStore, 2)
	for i := range reqs {
		stores[i] = state.Wrap(open(i, reqs[i].User, "agent-"+reqs[i].User), state.Hooks{
			After: func(_ context.Context, op state.Op, c state.Call) {
				switch {
				case op == state.OpPrepareSubmits:
					prepared[i].Add(int32(c.Items))
				case op == state.OpDestinationRefs && reads[i].Add(1) == 1:
					// the first read has its answer: wait for the other's
					arrived.Done()
					select {
					case <-both:
					case <-time.After(time.Minute):
						t.Errorf("agent %d: the other agent never read the owners", i)
					}
				}
			},
		})
	}
	run := func(i int, once bool) {
		cfg := w.config("agent-" + reqs[i].User)
		cfg.User, cfg.Once = reqs[i].User, once
		must(t, w.agent(cfg, stores[i]).Run(ctx))
	}
	wg.Go(func() { run(0, true) })
	wg.Go(func() { run(1, true) })
	wg.Wait()
	for i := range reqs {
		if prepared[i].Load() != 1 {
			t.Fatalf("agent %d recorded the ownership of %d transfers, want 1: the race did not happen", i, prepared[i].Load())
		}
	}
	if n := len(w.sim.Files()); n != 1 {
		t.Fatalf("%d files submitted to FTS, want 1: both racing transfers were sent for one destination", n)
	}
	for i := range reqs {
		if reads[i].Load() != 2 {
			t.Fatalf("agent %d read the owners %d times in its pass, want 2 (before and after recording its ownership)", i, reads[i].Load())
		}
	}
	first, second := 0, 1
	if w.get(reqs[1].ID()).State == state.StateSubmitted {
		first, second = 1, 0
	}
	owner, waiter := w.get(reqs[first].ID()), w.get(reqs[second].ID())
	if owner.State != state.StateSubmitted || waiter.State != state.StateNew || waiter.Attempts != 0 || !waiter.DestOwnedSince.IsZero() ||
		!strings.Contains(waiter.Reason, "waiting: transfer "+owner.ID) || !waiter.RetryAfter.After(w.clk.Now()) {
		t.Fatalf("after the race: %s %s; %s %s %q, %d attempts, owned since %s, retry after %s; want one submitted, the other waiting for it, owning nothing",
			owner.ID, owner.State, waiter.ID, waiter.State, waiter.Reason, waiter.Attempts, waiter.DestOwnedSince, waiter.RetryAfter)
	}

	run(first, false)
	if got := w.get(owner.ID); got.State != state.StateDone {
		t.Fatalf("owner %s %q, want done", got.State, got.Reason)
	}
	run(second, false)
	if got := w.get(waiter.ID); got.State != state.StateDone || !strings.Contains(got.Reason, "already there: transfer "+owner.ID) {
		t.Errorf("waiter %s %q, want done, already there", got.State, got.Reason)
	}
	if n := len(w.sim.Files()); n != 1 {
		t.Errorf("%d files submitted to FTS, want 1", n)
	}
}
