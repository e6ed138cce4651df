package agent_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/tokens"
	"strings"
	"testing"
	"time"
)

// TestAgent_MalformedJobFailsOnceFTSTookOne: a job FTS refuses as
// malformed (400: a URL without a host) fails at once, of class
// unsupported, when the same FTS accepted a job of the run, whether that
// answer was handled before the refusals or after them in the batch (the
// bad jobs' priority sorts them after or before the good one); the
// accepted one is done.
func TestAgent_MalformedJobFailsOnceFTSTookOne(t *testing.T) {
	for name, prio := range map[string]int{"refused jobs after": -1, "refused jobs first": 1} {
		t.Run(name, func(t *testing.T) { malformedAmongGood(t, prio) })
	}
}

func malformedAmongGood(t *testing.T, prio int) {
	w := newWorld(t, ftstest.Options{})
	const noHost = "T2_XX_NoHost"
	sites := fmt.Sprintf("%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: gsiftp\n  rules:\n    - path-match: /store/(.*)\n      result: gsiftp:///store/$1\n", srcSite, w.src, dstSite, w.dst, noHost)
	w.useSites("nohost-sites.yaml", sites)
	var good, bad []state.Request
	for i := range 3 {
		r, _ := w.request("good", i, true)
		good = append(good, r)
	}
	for i := range 20 { // two jobs of at most 15 files
		b, _ := w.request("nohost", i, true)
		b.Destination = noHost
		b.Priority = prio
		bad = append(bad, b)
	}
	w.enqueue(append(append([]state.Request{}, good...), bad...))
	must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
	for _, r := range good {
		if tr := w.get(r.ID()); tr.State != state.StateDone {
			t.Errorf("%s: %s %q, want done", tr.ID, tr.State, tr.Reason)
		}
	}
	for _, r := range bad {
		tr := w.get(r.ID())
		if tr.State != state.StateFailed || tr.ErrorClass != string(state.ClassUnsupported) || tr.Attempts != 1 ||
			!strings.Contains(tr.Reason, "Missing host") {
			t.Errorf("%s: %s of class %q after %d attempts (%q); want failed at once, unsupported, with FTS's reason",
				tr.ID, tr.State, tr.ErrorClass, tr.Attempts, tr.Reason)
		}
	}
}

// TestAgent_RefusedAsMalformedBeforeAnyJob: a server that refuses every
// job with 400 for a reason of its own (here unmanaged tokens, which it
// does not allow) fails nothing. The run's first refused job is retried
// after the cool-off (an attempt counted: it may be the job's fault), the
// second stops the run with an error that says so, and its transfers and
// the rest of the queue are released without penalty.
func TestAgent_RefusedAsMalformedBeforeAnyJob(t *testing.T) {
	w := newWorld(t, ftstest.Options{RefuseUnmanagedTokens: true})
	cmd, _ := tokenWorld(t, w, epoch.Add(24*time.Hour))
	var reqs []state.Request
	for i := range 40 { // three jobs of at most 15 files
		r, _ := w.request("refused", i, true)
		reqs = append(reqs, r)
	}
	w.enqueue(reqs)
	cfg := w.config("agent-1")
	cfg.StorageTokens, cfg.UnmanagedTokens = &tokens.Source{Command: cmd, Now: w.clk.Now}, true
	err := w.agent(cfg, nil).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "accepted none") || !strings.Contains(err.Error(), "Unmanaged tokens") {
		t.Fatalf("Run = %v, want the run stopped for FTS's refusals", err)
	}
	if errors.Is(err, state.ErrLockLost) {
		t.Fatalf("Run = %v: not a lost lock", err)
	}
	byAttempts := map[int]int{}
	for _, r := range reqs {
		tr := w.get(r.ID())
		if tr.State != state.StateNew {
			t.Fatalf("%s: %s %q, want back in the queue", tr.ID, tr.State, tr.Reason)
		}
		byAttempts[tr.Attempts]++
		if tr.Attempts == 1 && !strings.Contains(tr.Reason, "FTS accepted no job of this run yet") {
			t.Errorf("%s: retried with reason %q, want one that says why it was not failed", tr.ID, tr.Reason)
		}
	}
	if n := byAttempts[1]; n == 0 || n > cfg.MaxFilesPerJob || byAttempts[0] != len(reqs)-n {
		t.Errorf("transfers by attempts %v: want one job's (at most %d) charged an attempt, the others none", byAttempts, cfg.MaxFilesPerJob)
	}
}
