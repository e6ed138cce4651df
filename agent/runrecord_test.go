package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_RecordsRunInLock: a run records in the user's lock document,
// as it releases the lock, when it started and ended and its exit code;
// a run that FTS refused records the error and its code.
func TestAgent_RecordsRunInLock(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("record", 1, true)
	w.enqueue([]state.Request{r})
	ctx := context.Background()
	lastRun := func() *state.RunRecord {
		t.Helper()
		ls, err := w.store.Locks(ctx, testUser)
		if err != nil || len(ls) != 1 {
			t.Fatalf("Locks: %+v, %v", ls, err)
		}
		if !ls[0].Expire.IsZero() {
			t.Fatalf("lock still held after the run: %+v", ls[0])
		}
		return ls[0].LastRun
	}

	start := w.clk.Now()
	if err := w.agent(w.config("agent-ok"), nil).Run(ctx); err != nil {
		t.Fatal(err)
	}
	run := lastRun()
	if run == nil || run.Holder != "agent-ok" || !run.Started.Equal(start) || !run.Ended.Equal(w.clk.Now()) || run.ExitCode != 0 || run.Error != "" {
		t.Fatalf("last run %+v, want agent-ok from %s to %s, exit 0", run, start, w.clk.Now())
	}

	tf := filepath.Join(t.TempDir(), "bad-token")
	must(t, os.WriteFile(tf, []byte("not-a-token"), 0o600))
	bad, err := fts.New(fts.Config{Endpoint: w.sim.URL, TokenFile: tf, Timeout: 5 * time.Second, MaxElapsed: time.Second})
	must(t, err)
	cfg := w.config("agent-refused")
	cfg.ExitCode = func(err error) int { return 7 }
	a, err := agent.New(cfg, w.open("agent-refused"), bad, w.sites, w.deleter, w.log)
	must(t, err)
	runErr := a.Run(ctx)
	if runErr == nil {
		t.Fatal("a run FTS refused succeeded")
	}
	run = lastRun()
	if run == nil || run.Holder != "agent-refused" || run.ExitCode != 7 || !strings.Contains(run.Error, "whoami") {
		t.Fatalf("last run %+v after %v, want agent-refused, exit 7 and the error", run, runErr)
	}
}
