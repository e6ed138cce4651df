package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// slowRenewal is a store whose lock renewal, once armed, hangs until its
// context ends (a slow CouchDB), and whose ActiveJobs runs a hook.
type slowRenewal struct {
	agent.Store
	armed    atomic.Bool
	renewing chan struct{}
	onActive func()
}

func (s *slowRenewal) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (state.Lock, error) {
	if !s.armed.Load() {
		return s.Store.RenewLock(ctx, l, ttl)
	}
	close(s.renewing)
	<-ctx.Done()
	return state.Lock{}, ctx.Err()
}

func (s *slowRenewal) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	s.onActive()
	return s.Store.ActiveJobs(ctx, user)
}

// TestAgent_StopDuringLockRenewal: the agent finishes its run while its
// lock keeper is in the middle of a renewal (found by the chaos scenario
// proc-sigterm-each-phase on CouchDB, where a renewal takes a while). The
// renewal cancelled by the agent's own shutdown is no loss of ownership:
// the run ends without error and releases the lock.
func TestAgent_StopDuringLockRenewal(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	store := &slowRenewal{Store: w.open("agent-1"), renewing: make(chan struct{})}
	store.onActive = func() {
		if store.armed.Swap(true) {
			return
		}
		// the renewal is due, and the lock close to its expiry
		w.clk.Advance(agent.DefaultLockTTL)
		select {
		case <-store.renewing:
		case <-time.After(10 * time.Second):
			t.Error("the keeper did not renew the lock within 10 s")
		}
	}
	if err := w.agent(w.config("agent-1"), store).Run(context.Background()); err != nil {
		t.Fatalf("Run = %v, want nil: stopping interrupted a renewal, nothing was lost", err)
	}
	other := w.open("agent-2")
	if _, err := other.AcquireLock(context.Background(), testUser, "agent-2", time.Minute); err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
}
