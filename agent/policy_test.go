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

// TestNew_PolicyFromStore: the agent works from the store's user, owner
// and policy; a configuration that says otherwise is refused, naming both.
func TestNew_PolicyFromStore(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	store := w.open("agent-1")
	for _, tc := range []struct {
		name string
		edit func(*agent.Config)
		want string
	}{
		{"user", func(c *agent.Config) { c.User = "bob" }, `user "bob", but the state store works for "` + store.(state.Configured).Config().Agent.User + `"`},
		{"owner", func(c *agent.Config) { c.Owner = "agent-2" }, `owner "agent-2", but the state store writes as "agent-1"`},
		{"lease", func(c *agent.Config) { c.Policy.LeaseTTL = time.Minute }, "LeaseTTL:1m0s"},
	} {
		cfg := w.config("agent-1")
		tc.edit(&cfg)
		_, err := agent.New(cfg, store, w.client, w.sites, w.deleter, w.log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	cfg := w.config("")
	cfg.User, cfg.Policy = "", state.Policy{}
	if _, err := agent.New(cfg, store, w.client, w.sites, w.deleter, w.log); err != nil {
		t.Fatalf("New with the identity and policy left to the store: %v", err)
	}
}

// TestAgent_CountsRetriesAsTheStoreWrote: whether a failure is retried is
// the store's decision, by its policy; the agent counts what the store
// wrote. The store allows 2 attempts and the agent is told nothing of it.
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
	cfg := w.config("")
	cfg.User, cfg.Policy = "", state.Policy{}
	a := w.agent(cfg, store)
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
