package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// frozenStore is an agent's store whose lock and lease renewals wait while
// the agent is frozen (SIGSTOP stops its keeper too).
type frozenStore struct {
	agent.Store
	frozen *sync.RWMutex
}

func (s frozenStore) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	s.frozen.RLock()
	defer s.frozen.RUnlock()
	return s.Store.RenewLock(ctx, l, ttl)
}

func (s frozenStore) RenewLeases(ctx context.Context, ts []state.Transfer) ([]state.Result, error) {
	s.frozen.RLock()
	defer s.frozen.RUnlock()
	return s.Store.RenewLeases(ctx, ts)
}

// freezeAtStatus is an FTS whose first status reply that when accepts
// (nil: any) is delivered only after freeze has run: the agent was frozen
// between reading FTS and acting on what it read.
type freezeAtStatus struct {
	agent.FTS
	once   sync.Once
	when   func([]fts.JobStatus) bool
	freeze func()
}

func (f *freezeAtStatus) Status(ctx context.Context, ids []string) ([]fts.JobStatus, error) {
	sts, err := f.FTS.Status(ctx, ids)
	if f.when == nil || f.when(sts) {
		f.once.Do(f.freeze)
	}
	return sts, err
}

// hasFailedFile reports whether a status reply holds a failed file.
func hasFailedFile(sts []fts.JobStatus) bool {
	for _, st := range sts {
		for _, file := range st.Files {
			if file.State == "FAILED" {
				return true
			}
		}
	}
	return false
}

// TestAgent_FrozenAgentDeletesNothingAfterTakeover: an agent frozen after
// FTS reported a transfer failed, for longer than its lock lives, while
// another agent takes the user over, retries the transfer and copies it,
// must not delete that good copy when it wakes up: it has lost its lock.
func TestAgent_FrozenAgentDeletesNothingAfterTakeover(t *testing.T) {
	w := newWorld(t, ftstest.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	r, data := w.request("frozen", 0, true)
	w.enqueue([]state.Request{r})
	ctx := context.Background()

	var frozen sync.RWMutex
	var bErr error
	ftsA := &freezeAtStatus{FTS: w.client, when: hasFailedFile, freeze: func() {
		frozen.Lock()
		defer frozen.Unlock()
		w.sim.SetFailureRate(0)
		w.clk.Advance(agent.DefaultLockTTL + time.Minute) // A's lock and leases expire
		bErr = w.agent(w.config("agent-B"), nil).Run(ctx)
	}}
	cfg := w.config("agent-A")
	storeA := frozenStore{Store: w.open("agent-A"), frozen: &frozen}
	a, err := agent.New(cfg, storeA, ftsA, w.sites, w.deleter, w.log)
	must(t, err)
	errA := a.Run(ctx)
	if bErr != nil {
		t.Fatalf("the agent that took over: %v", bErr)
	}
	if !errors.Is(errA, state.ErrLockLost) {
		t.Errorf("the frozen agent returned %v, want the lost lock", errA)
	}
	if got := w.get(r.ID()); got.State != state.StateDone {
		t.Fatalf("transfer is %s (%q), want done", got.State, got.Reason)
	}
	if got, err := os.ReadFile(w.dstPath(r)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the done transfer's copy is gone or wrong after the frozen agent woke up: %v", err)
	}
}
