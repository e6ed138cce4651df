package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// stopDuringWhoami is an FTS whose whoami is interrupted by SIGTERM: it
// cancels the run's context and waits for it.
type stopDuringWhoami struct {
	agent.FTS
	stop context.CancelFunc
}

func (f stopDuringWhoami) VO(ctx context.Context) (string, error) {
	f.stop()
	<-ctx.Done()
	return "", ctx.Err()
}

// TestAgent_SIGTERMDuringStartupCheck: SIGTERM while the agent asks FTS
// whoami right after taking the lock is a graceful stop like any other: Run
// returns nil (exit 0, not 1) and the lock is released.
func TestAgent_SIGTERMDuringStartupCheck(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("stop", 0, true)
	w.enqueue([]state.Request{r})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	a, err := agent.New(w.config("agent-1"), w.open("agent-1"), stopDuringWhoami{w.client, stop}, w.sites, w.deleter, w.log)
	must(t, err)
	if err := a.Run(ctx); err != nil {
		t.Fatalf("Run after SIGTERM: %v, want nil", err)
	}
	if _, err := w.open("agent-2").AcquireLock(context.Background(), testUser, "agent-2", time.Minute); err != nil {
		t.Errorf("the lock was not released: %v", err)
	}
	if got := w.get(r.ID()); got.State != state.StateNew {
		t.Errorf("transfer is %s, want new (untouched)", got.State)
	}
}
