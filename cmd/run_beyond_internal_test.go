package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestRunReport_NextRetryAndCounts: the report's next retry is the
// earliest retry_after of a waiting transfer, and its counts are the
// queue's.
func TestRunReport_NextRetryAndCounts(t *testing.T) {
	ctx := context.Background()
	clk := statetest.NewClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	st, err := memfile.Open(filepath.Join(t.TempDir(), "s.aso"), state.Config{
		Agent:  state.Agent{User: "alice", Owner: "a1"},
		Policy: state.Policy{CoolOff: 10 * time.Minute, MaxAttempts: 3, LeaseTTL: 15 * time.Minute},
		Now:    clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Enqueue(ctx, []state.Request{statetest.Req("alice", 1), statetest.Req("alice", 2), statetest.Req("alice", 3)}); err != nil {
		t.Fatal(err)
	}
	ts, err := statetest.Claim(ctx, st, 2)
	if err != nil || len(ts) != 2 {
		t.Fatalf("claim: %d, %v", len(ts), err)
	}
	if _, err := st.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "no route"}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := st.AbortTransfers(ctx, []state.Abort{{Transfer: ts[1], Reason: "no route"}}); err != nil {
		t.Fatal(err)
	}
	r := newRunReport()
	r.User = "alice"
	if err := r.queue(ctx, st, "alice"); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 4, 10, 10, 0, 0, time.UTC)
	if r.NextRetry == nil || !r.NextRetry.Equal(want) {
		t.Errorf("next retry %v, want %v (the earlier of the two cool-offs)", r.NextRetry, want)
	}
	if r.ByState[state.StateNew] != 3 {
		t.Errorf("by_state %v, want 3 new", r.ByState)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.write(path, usagef("bad flag")); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["exit_code"] != float64(ExitUsage) || got["next_retry"] != "2026-03-04T10:10:00Z" {
		t.Errorf("written report: exit_code %v next_retry %v", got["exit_code"], got["next_retry"])
	}
}
