package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestNew_NeedsItsIdentity: the caller gives the agent its user and owner
// (the same the store handle was opened with); without them New refuses.
func TestNew_NeedsItsIdentity(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	store := w.open("agent-1")
	for _, tc := range []struct {
		name string
		edit func(*agent.Config)
	}{
		{"no user", func(c *agent.Config) { c.User = "" }},
		{"no owner", func(c *agent.Config) { c.Owner = "" }},
	} {
		cfg := w.config("agent-1")
		tc.edit(&cfg)
		if _, err := agent.New(cfg, store, w.client, w.sites, w.deleter, w.log); err == nil || !strings.Contains(err.Error(), "user and owner are required") {
			t.Errorf("%s: New: %v, want an error naming the user and owner", tc.name, err)
		}
	}
}

// TestAgent_CountsRetriesAsTheStoreWrote: whether a failure is retried is
// the store's decision, by its policy; the agent counts what the store
// wrote. The store allows 2 attempts, and the agent's own configuration
// says 3: the store's results decide.
func TestAgent_CountsRetriesAsTheStoreWrote(t *testing.T) {
	w := newWorld(t, ftstest.Options{Seed: 3, FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	var reqs []state.Request
	for i := 0; i < 3; i++ {
		r, _ := w.request("retried", i, true)
		reqs = append(reqs, r)
	}
	w.enqueue(reqs)
	store, err := w.opener(state.Config{
		Agent:  state.Agent{User: testUser, Owner: "agent-1"},
		Policy: state.Policy{CoolOff: 5 * time.Minute, MaxAttempts: 2, LeaseTTL: 15 * time.Minute},
		Now:    w.clk.Now,
	})
	must(t, err)
	defer store.Close()
	a := w.agent(w.config("agent-1"), store)
	var total agent.PassStats
	a.OnPass = func(ps agent.PassStats) { total.Retried += ps.Retried; total.Failed += ps.Failed }
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateFailed || tr.Attempts != 2 {
			t.Errorf("%s: %s after %d attempts, want failed after 2", tr.ID, tr.State, tr.Attempts)
		}
	}
	if total.Retried != 3 || total.Failed != 3 {
		t.Errorf("passes counted %d retried and %d failed, want 3 and 3", total.Retried, total.Failed)
	}
	if got := failuresOf(t, a.Metrics(), "retried", "timeout"); got != 3 {
		t.Errorf("aso_transfer_failures_total{outcome=retried} = %v, want 3", got)
	}
}
