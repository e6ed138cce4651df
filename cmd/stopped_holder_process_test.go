package cmd_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
)

// TestRunProcess_StoppedHolderIsNotDead: an agent stopped with SIGSTOP
// while it holds its user's run lock is "stopped, not dead": a second run
// is refused (exit 3) saying so, never calling it dead nor taking its lock
// while the lock is valid, and aso status shows it held, stopped; resumed,
// the agent drains its queue.
func TestRunProcess_StoppedHolderIsNotDead(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(71), Seed: 71})
	w.Add("gus", proctest.Good, 4)
	long := []string{"--lock-ttl", "1m", "--lease-ttl", "2m"}
	a := w.StartAgent("gus", long...)
	if !a.WaitLog(`"msg":"run lock taken"`, time.Minute) {
		t.Fatalf("the agent took no lock:\n%s", a.Tail(20))
	}
	a.Pause()
	resumed := false
	defer func() {
		if !resumed {
			a.Resume()
		}
	}()
	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := cmd.ExecuteWith(context.Background(), args,
			cmd.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, LookupEnv: w.LookupEnv})
		return code, out.String(), errb.String()
	}
	code, _, stderr := run(w.AgentArgs("gus", append(long, "--log-level", "error")...)...)
	if code != cmd.ExitLocked || !strings.Contains(stderr, "is stopped, not dead") ||
		strings.Contains(stderr, "looks dead") {
		t.Errorf("a run beside the stopped holder: exit %d, stderr %q; want %d, saying the holder is stopped, not dead", code, stderr, cmd.ExitLocked)
	}
	if code, out, errs := run("status", "--user", "gus", "--state", w.StateURL); code != 0 || !regexp.MustCompile(`(?m)^gus\s+held, stopped\s`).MatchString(out) {
		t.Errorf("aso status: exit %d, want the lock held, stopped:\n%s%s", code, out, errs)
	}
	a.Resume()
	resumed = true
	if code := a.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("the resumed agent exited %d, want 0 (its lock was not taken):\n%s", code, a.Tail(30))
	}
	if r := w.Check(proctest.CheckOptions{}); r.Done != 4 {
		t.Errorf("%s: want gus's 4 done", r)
	}
}
