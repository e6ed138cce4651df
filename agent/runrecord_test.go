package agent_test

import (
	"context"
	"errors"
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

// TestAgent_TakesOverTheLockOfADeadHolder: a live run lock whose holder is
// known dead (Config.HolderGone) is taken over at once, the takeover
// recorded in the lock and the run's record and the dead holder's claims
// taken back; a holder not known dead keeps its lock (ErrLocked), and
// without HolderGone every held lock is waited out.
func TestAgent_TakesOverTheLockOfADeadHolder(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := make([]state.Request, 3)
	for i := range reqs {
		reqs[i], _ = w.request("takeover", i, true)
	}
	w.enqueue(reqs)
	ctx := context.Background()
	dead := w.open("host:11:5-m-dead")
	if _, err := dead.AcquireLock(ctx, testUser, "host:11:5-m-dead", time.Hour); err != nil {
		t.Fatal(err)
	}
	claimed, err := dead.NewTransfers(ctx, state.ClaimRequest{Limit: 2})
	if err != nil || len(claimed.Transfers) != 2 {
		t.Fatalf("the dead agent's claim: %d, %v", len(claimed.Transfers), err)
	}
	judged := map[string]int{}
	judge := func(gone bool) func(string) (string, bool) {
		return func(h string) (string, bool) { judged[h]++; return "process 11 is gone", gone }
	}

	for _, c := range []struct {
		name string
		gone func(string) (string, bool)
	}{{"no judge", nil}, {"holder alive", judge(false)}} {
		cfg := w.config("agent-" + strings.ReplaceAll(c.name, " ", "-"))
		cfg.HolderGone = c.gone
		if err := w.agent(cfg, nil).Run(ctx); !errors.Is(err, state.ErrLocked) {
			t.Fatalf("%s: run under the live lock: %v, want ErrLocked", c.name, err)
		}
	}
	cfg := w.config("agent-new")
	cfg.HolderGone = judge(true)
	if err := w.agent(cfg, nil).Run(ctx); err != nil {
		t.Fatalf("run taking the lock over: %v", err)
	}
	if judged["host:11:5-m-dead"] != 2 {
		t.Errorf("the holder was judged %v, want twice", judged)
	}
	ls, err := w.store.Locks(ctx, testUser)
	if err != nil || len(ls) != 1 || ls[0].LastRun == nil {
		t.Fatalf("Locks: %+v, %v", ls, err)
	}
	if run := ls[0].LastRun; run.Holder != "agent-new" || run.ExitCode != 0 || run.TookOver != "host:11:5-m-dead (process 11 is gone)" {
		t.Errorf("last run %+v, want agent-new's, exit 0, naming the holder it took the lock over from", run)
	}
	back := 0
	for _, r := range reqs {
		tr := w.get(r.ID())
		if tr.State != state.StateDone {
			t.Errorf("%s is %s after the run that took the lock over, want done", tr.ID, tr.State)
		}
		for _, h := range tr.History {
			if strings.Contains(h.Reason, "claim of host:11:5-m-dead taken back by agent-new") {
				back++
			}
		}
	}
	if back != len(claimed.Transfers) {
		t.Errorf("%d histories say the dead agent's claim was taken back, want %d", back, len(claimed.Transfers))
	}
}
