package cmd_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMain stops the CouchDB test server and removes the aso binary of the
// process tests at the end.
func TestMain(m *testing.M) {
	code := couchtest.Main(m)
	proctest.Cleanup()
	os.Exit(code)
}

// fastSim is a simulator whose files live about half a second.
func fastSim(seed int64) ftstest.Options {
	return ftstest.Options{
		Seed: seed, QueueDelay: 150 * time.Millisecond, StartDelay: 50 * time.Millisecond, TransferTime: 250 * time.Millisecond,
		FailureRate: 0.1, FailureReasons: []string{"TRANSFER [110] Connection timed out"},
	}
}

// TestRunProcess_Drains is the baseline of the process tests: one
// uninterrupted agent drains a mixed queue and every invariant holds.
func TestRunProcess_Drains(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: fastSim(3), Seed: 3})
	w.AddMix("alice", 60)
	p := w.RunToEnd("alice", time.Minute, "--max-files-per-job", "10")
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%s in %s", r, p.Runtime().Round(time.Millisecond))
	r.Require(t)
	if r.Done == 0 || r.Failed == 0 {
		t.Errorf("want some done and some failed transfers: %s", r)
	}
}

// backends runs f once on a memfile store and once on CouchDB.
func backends(t *testing.T, f func(t *testing.T, couch bool)) {
	t.Run("memfile", func(t *testing.T) { f(t, false) })
	t.Run("couchdb", func(t *testing.T) { f(t, true) })
}

// TestRunProcess_TwoAgentsOneUser starts two agents for the same user at
// the same moment: exactly one works, the other exits 3 at once without
// claiming or changing anything, and the queue drains with every invariant.
func TestRunProcess_TwoAgentsOneUser(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: fastSim(5), Seed: 5})
		w.AddMix("dave", 60)
		// a long lock TTL: the loser cannot have waited for an expiry
		args := []string{"--lock-ttl", "1m", "--max-files-per-job", "10"}
		a, b := w.StartAgent("dave", args...), w.StartAgent("dave", args...)
		ca, cb := a.Wait(time.Minute), b.Wait(time.Minute)
		winner, loser := a, b
		if ca != cmd.ExitOK {
			winner, loser = b, a
		}
		if got := []int{winner.Code(), loser.Code()}; got[0] != cmd.ExitOK || got[1] != cmd.ExitLocked {
			t.Fatalf("exit codes %d and %d, want one 0 and one %d\n%s\n%s", ca, cb, cmd.ExitLocked, a.Tail(20), b.Tail(20))
		}
		if d := loser.Runtime(); d > 10*time.Second {
			t.Errorf("the locked-out agent took %s to exit", d)
		}
		if loser.WaitLog("run lock taken", 0) {
			t.Errorf("the locked-out agent says it took the lock:\n%s", loser.Tail(20))
		}
		if ids := w.TouchedBy(loser.Pid()); len(ids) > 0 {
			t.Errorf("the locked-out agent touched %d transfers, e.g. %s", len(ids), ids[0])
		}
		if ids := w.TouchedBy(winner.Pid()); len(ids) != 60 {
			t.Errorf("the working agent touched %d transfers, want all 60", len(ids))
		}
		r := w.Check(proctest.CheckOptions{})
		t.Logf("%s", r)
		r.Require(t)
	})
}

// TestRunProcess_SIGTERM stops agents with SIGTERM in each phase: each
// exits 0 within seconds, leaves nothing acquired without a submit_sid and
// nothing broken, releases its lock (a new agent starts at once, although
// the lock's TTL is a minute), and the next run drains everything.
func TestRunProcess_SIGTERM(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	cases := []struct {
		name  string
		after string // the log line after which SIGTERM is sent
	}{
		{"right after start", "run lock taken"},
		{"while submitting", `"msg":"job submitted"`},
		{"while jobs are active", `"msg":"pass"`},
	}
	sim := ftstest.Options{Seed: 9, QueueDelay: 300 * time.Millisecond, StartDelay: 50 * time.Millisecond, TransferTime: 500 * time.Millisecond,
		FailureRate: 0.1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}}
	// claims of 12 fill two jobs of 5 and hold 2 for the next round, so a
	// stop in the submit phase finds claimed transfers without a submission
	args := []string{"--lock-ttl", "1m", "--max-files-per-job", "5", "--batch-size", "12"}
	backends(t, func(t *testing.T, couch bool) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w := proctest.New(t, proctest.Options{Couch: couch, Sim: sim, Seed: 9})
				w.AddMix("erin", 60)
				p := w.StartAgent("erin", args...)
				if !p.WaitLog(c.after, 30*time.Second) {
					t.Fatalf("no %s in the log\n%s", c.after, p.Tail(20))
				}
				p.Term()
				sent := time.Now()
				if code := p.Wait(15 * time.Second); code != cmd.ExitOK {
					t.Fatalf("exit %d after SIGTERM, want 0\n%s", code, p.Tail(30))
				}
				if d := time.Since(sent); d > 5*time.Second {
					t.Errorf("took %s to stop after SIGTERM", d)
				}
				r := w.Check(proctest.CheckOptions{Unfinished: true})
				t.Logf("after SIGTERM %s: %s", c.name, r)
				r.Require(t)
				if r.Unfinished == 0 {
					t.Errorf("nothing was left to do after SIGTERM %s: the stop came too late to test anything", c.name)
				}
				if c.name == "while submitting" {
					if n := releasedOnStop(t, w); n == 0 {
						t.Errorf("no claimed transfer was released: SIGTERM did not interrupt the submission")
					}
				}
				q := w.StartAgent("erin", args...)
				if !q.WaitLog("run lock taken", 15*time.Second) {
					t.Fatalf("the next agent did not get the lock (exit %d): the stopped agent did not release it\n%s", q.Code(), q.Tail(20))
				}
				if code := q.Wait(time.Minute); code != cmd.ExitOK {
					t.Fatalf("the next run exited %d\n%s", code, q.Tail(30))
				}
				r = w.Check(proctest.CheckOptions{})
				t.Logf("after the next run: %s", r)
				r.Require(t)
			})
		}
	})
}

// releasedOnStop counts the transfers an agent released, unsubmitted,
// when it was asked to stop.
func releasedOnStop(t *testing.T, w *proctest.World) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := w.Store().List(ctx, state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range ts {
		if strings.Contains(tr.Reason, "agent stopped before submission") {
			n++
		}
	}
	return n
}
