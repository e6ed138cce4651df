package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// thawStore runs freeze once, inside the first call of the chosen kind,
// after the agent's own write fence passed and before the backend took its
// file lock (claim) or after the backend wrote (prepare): the agent was
// frozen at that point while another agent took the user over.
type thawStore struct {
	frozenStore
	once        sync.Once
	freeze      func()
	atClaim     bool
	afterPrepar bool
}

func (s *thawStore) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	if s.atClaim {
		s.once.Do(s.freeze)
	}
	return s.frozenStore.NewTransfers(ctx, r)
}

func (s *thawStore) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	res, err := s.frozenStore.PrepareSubmits(ctx, jobs)
	if s.afterPrepar {
		s.once.Do(s.freeze)
	}
	return res, err
}

// TestAgent_FrozenWaitingForFileLockWritesNothing: an agent whose write
// fence passed, frozen before it got memfile's file lock for longer than its
// run lock lives while another agent took the user over and drained it,
// claims nothing when it thaws, not even a transfer enqueued meanwhile.
func TestAgent_FrozenWaitingForFileLockWritesNothing(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r1, _ := w.request("thaw", 1, true)
	r2, _ := w.request("thaw", 2, true)
	w.enqueue([]state.Request{r1})
	ctx := context.Background()

	var frozen sync.RWMutex
	var bErr error
	s := &thawStore{frozenStore: frozenStore{Store: w.open("agent-A"), frozen: &frozen}, atClaim: true}
	s.freeze = func() {
		frozen.Lock()
		defer frozen.Unlock()
		w.clk.Advance(agent.DefaultLockTTL + time.Minute)
		bErr = w.agent(w.config("agent-B"), nil).Run(ctx)
		w.enqueue([]state.Request{r2})
	}
	runThawed(t, w, s, &bErr)
	if got := w.get(r1.ID()); got.State != state.StateDone {
		t.Errorf("first transfer is %s, want done by the agent that took over", got.State)
	}
	got := w.get(r2.ID())
	if got.State != state.StateNew || got.Owner != "" {
		t.Errorf("transfer enqueued while the agent was frozen is %s owned by %q, want new and unclaimed", got.State, got.Owner)
	}
	for _, h := range got.History {
		if h.By == "agent-A" {
			t.Errorf("the thawed agent wrote %+v", h)
		}
	}
}

// TestAgent_FrozenBeforeSubmitSendsNothing: an agent frozen between writing
// submit_sid and submitting to FTS, while another agent took over and
// submitted the job itself, sends nothing to FTS when it thaws.
func TestAgent_FrozenBeforeSubmitSendsNothing(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("thaw", 3, true)
	w.enqueue([]state.Request{r})
	ctx := context.Background()

	var frozen sync.RWMutex
	var bErr error
	submitsByB := 0
	s := &thawStore{frozenStore: frozenStore{Store: w.open("agent-A"), frozen: &frozen}, afterPrepar: true}
	s.freeze = func() {
		frozen.Lock()
		defer frozen.Unlock()
		w.clk.Advance(agent.DefaultLockTTL + time.Minute)
		before := w.sim.Requests()["submit"]
		bErr = w.agent(w.config("agent-B"), nil).Run(ctx)
		submitsByB = w.sim.Requests()["submit"] - before
	}
	before := w.sim.Requests()["submit"]
	runThawed(t, w, s, &bErr)
	if submitsByB != 1 {
		t.Errorf("the agent that took over submitted %d times, want 1 (adopting the sid)", submitsByB)
	}
	if n := w.sim.Requests()["submit"] - before; n != submitsByB {
		t.Errorf("FTS received %d submissions, %d of them from the thawed agent", n, n-submitsByB)
	}
	if got := w.get(r.ID()); got.State != state.StateDone {
		t.Errorf("transfer is %s (%q), want done", got.State, got.Reason)
	}
}

// runThawed runs agent A on s to its end; the agent that took over while A
// was frozen must have succeeded (*bErr), and A must end on its lost lock.
func runThawed(t *testing.T, w *world, s *thawStore, bErr *error) {
	t.Helper()
	a, err := agent.New(w.config("agent-A"), s, w.client, w.sites, w.deleter, w.log)
	must(t, err)
	errA := a.Run(context.Background())
	if *bErr != nil {
		t.Fatalf("the agent that took over: %v", *bErr)
	}
	if !errors.Is(errA, state.ErrLockLost) {
		t.Errorf("the thawed agent returned %v, want the lost lock", errA)
	}
}
