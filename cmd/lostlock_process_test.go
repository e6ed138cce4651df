package cmd_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/busytest"
	"github.com/asyncstageout/aso/internal/proctest"
)

// TestRunProcess_FrozenAgentWakesToALostLock: an agent frozen (SIGSTOP)
// past its run lock's expiry, while another agent took the lock, finished
// the work and released the lock, wakes (SIGCONT) with nothing left to do.
// It notices that it lost the lock, says so, records nothing in the lock
// (the last run there stays the other agent's), and exits 75, as its report
// and metrics file say.
func TestRunProcess_FrozenAgentWakesToALostLock(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		const user = "olga"
		sim := ftstest.Options{Seed: 71, QueueDelay: 100 * time.Millisecond, TransferTime: 300 * time.Millisecond}
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: sim, Seed: 71})
		w.Add(user, proctest.Good, 3)
		// short enough to wait out, long enough for a busy machine to renew
		ttl := busytest.Scale(2 * time.Second)
		a := startRun(t, w, "frozen", user, "--lock-ttl", ttl.String(), "--lease-ttl", (2 * ttl).String())
		if !a.p.WaitLog(`"msg":"job submitted"`, busytest.Scale(30*time.Second)) {
			t.Fatalf("the first agent submitted nothing\n%s", a.p.Tail(20))
		}
		w.PauseOutsideStore(a.p) // else the next agent waits for the file's flock
		frozen := time.Now()
		ls, err := w.Store().Locks(context.Background(), user)
		if err != nil || len(ls) != 1 || ls[0].Expire.IsZero() {
			t.Fatalf("the frozen agent's lock: %+v, %v", ls, err)
		}
		// the frozen agent renews nothing: its lock ends at the stored
		// expiry, a moment on the clock (not a condition to poll)
		time.Sleep(time.Until(ls[0].Expire.Add(100 * time.Millisecond)))

		b := startRun(t, w, "next", user, "--lock-ttl", "10m")
		b.wantExit(t, w, cmd.ExitOK, true)
		a.p.Resume()
		a.wantExit(t, w, cmd.ExitTempFail, false, "lost")
		t.Logf("%s", a.p.Tail(8))
		if run := lastRunOf(t, w, user); run == nil || run.ExitCode != 0 {
			t.Errorf("the lock's last run is %+v, want the second agent's, exit 0", run)
		}
		r := w.Check(proctest.CheckOptions{})
		t.Logf("frozen for %s: %s", time.Since(frozen).Round(time.Millisecond), r)
		r.Require(t)
	})
}
