package cmd_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
)

// TestRunProcess_SIGHUP stops an agent with SIGHUP: like SIGTERM it exits
// 0, logs the signal, and releases its run lock, so that the next run
// starts at once instead of exiting 3 for a lock TTL.
func TestRunProcess_SIGHUP(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: fastSim(11), Seed: 11})
	w.AddMix("hank", 40)
	args := []string{"--lock-ttl", "1m", "--max-files-per-job", "5"}
	p := w.StartAgent("hank", args...)
	if !p.WaitLog("run lock taken", 30*time.Second) {
		t.Fatalf("the agent did not take its lock\n%s", p.Tail(30))
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("exit %d after SIGHUP, want 0\n%s", code, p.Tail(30))
	}
	logged := false
	for _, l := range p.LogLines() {
		if l["signal"] == "SIGHUP" && l["count"] == 1.0 {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no log line names the SIGHUP received\n%s", p.Tail(30))
	}
	next := w.StartAgent("hank", args...)
	if code := next.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("the next run exited %d, want 0 (the lock released)\n%s", code, next.Tail(30))
	}
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%s", r)
	r.Require(t)
}
