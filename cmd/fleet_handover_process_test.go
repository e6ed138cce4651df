package cmd_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// agentStart returns the pid and handed owner ID of the n-th (from 1)
// "agent started" line of the fleet p for user, waiting up to d for it.
func agentStart(t *testing.T, p *proctest.Proc, user string, n int, d time.Duration) (int, string) {
	t.Helper()
	k, pid, owner := 0, 0, ""
	if !p.Await(d, func(l map[string]any) bool {
		if l["msg"] != "agent started" || l["user"] != user {
			return false
		}
		pid, owner = int(l["pid"].(float64)), fmt.Sprint(l["owner"])
		k++
		return k == n
	}) {
		t.Fatalf("no agent %d of %s started\n%s", n, user, p.Tail(30))
	}
	return pid, owner
}

// lockOf reads the stored run lock of user in w.
func lockOf(t *testing.T, w *proctest.World, user string) state.LockDoc {
	t.Helper()
	locks, err := w.Store().Locks(context.Background(), user)
	if err != nil || len(locks) != 1 {
		t.Fatalf("the run lock of %s: %+v, %v", user, locks, err)
	}
	return locks[0]
}

// TestFleetProcess_HandOverRenewedAndReleased: the fleet takes ann's run
// lock before it starts her agent and hands it over: the agent runs under
// the handed owner ID, renews the lock under it (the fleet never renews),
// and on SIGTERM releases it with its own run record, which the fleet's
// release after the agent's end leaves as it is.
func TestFleetProcess_HandOverRenewedAndReleased(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: slowSim(51), Seed: 51})
	w.Add("ann", proctest.Good, 4)
	// renewed every 5 s; a renewal late by 10 s still keeps it
	p := w.Start("fleet", fleetArgs(w, "--max-agents", "1", "--lock-ttl", "15s")...)
	_, owner := agentStart(t, p, "ann", 1, 30*time.Second)
	if _, ok := holder.Parse(owner); !ok {
		t.Fatalf("agent started with owner %q: want the owner ID of the lock the fleet took", owner)
	}
	if !p.WaitLog(`"msg":"run lock taken"`, 30*time.Second) {
		t.Fatalf("ann's agent took no lock\n%s", p.Tail(30))
	}
	for _, l := range p.LogLines() {
		if l["msg"] == "run lock taken" && l["owner"] != owner {
			t.Errorf("the agent took the lock as %v, want the handed owner %s", l["owner"], owner)
		}
	}
	first := lockOf(t, w, "ann")
	renewed := w.AwaitStore(45*time.Second, p.Done(), func() bool {
		l := lockOf(t, w, "ann")
		if l.Holder != owner {
			t.Fatalf("ann's lock is held by %s, want the handed owner %s", l.Holder, owner)
		}
		return l.Expire.After(first.Expire.Time) // renewed by the agent
	})
	if !renewed {
		t.Fatalf("ann's lock was not renewed past %s\n%s", first.Expire, p.Tail(30))
	}
	p.Term()
	if code := p.Wait(30 * time.Second); code != cmd.ExitOK {
		t.Fatalf("fleet exit %d after SIGTERM, want 0\n%s", code, p.Tail(40))
	}
	l := lockOf(t, w, "ann")
	if !l.Expire.IsZero() || l.LastRun == nil || l.LastRun.Holder != owner || l.LastRun.ExitCode != 0 || l.LastRun.By != "" || l.LastRun.Error != "" {
		t.Errorf("ann's lock after the fleet stopped: %+v, last run %+v; want released by the agent with its own record", l, l.LastRun)
	}
	w.Check(proctest.CheckOptions{Unfinished: true}).Require(t)
}

// TestFleetProcess_HandOverAgentKilled: ann's agent is killed after it
// submitted, its lock live for minutes under the handed owner ID. The
// fleet releases that lock when it reaps the agent, recording the death,
// so another host's fleet takes the user at its first round, without
// waiting for the lock to expire, and its agent adopts the job: nothing
// is submitted twice.
func TestFleetProcess_HandOverAgentKilled(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: slowSim(52), Seed: 52})
	w.Add("ann", proctest.Good, 4)
	args := fleetArgs(w, "--max-agents", "1", "--discover-interval", "1s", "--lock-ttl", "5m", "--lease-ttl", "10m")
	a := w.Start("fleet-a", args...)
	pid, owner := agentStart(t, a, "ann", 1, 30*time.Second)
	// killed once its job is committed: killed before, its transfers stay
	// claimed under their leases (10m), and discovery finds ann due only
	// when they expire
	if !w.AwaitStore(30*time.Second, a.Done(), func() bool {
		ts, err := w.Store().List(context.Background(), state.Filter{User: "ann", States: []state.State{state.StateSubmitted}})
		return err == nil && len(ts) > 0
	}) {
		t.Fatalf("ann's agent did not submit\n%s", a.Tail(30))
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !a.WaitLog(`"msg":"released the run lock the fleet took for the agent"`, 30*time.Second) {
		t.Fatalf("the fleet did not release the killed agent's lock\n%s", a.Tail(30))
	}
	l := lockOf(t, w, "ann")
	if !l.Expire.IsZero() || l.LastRun == nil || l.LastRun.Holder != owner || l.LastRun.ExitCode == 0 || !strings.Contains(l.LastRun.Error, "without releasing") {
		t.Errorf("ann's lock after her agent was killed: %+v, last run %+v; want released with a record of the death", l, l.LastRun)
	}
	b := w.Start("fleet-b", args...)
	_, owner2 := agentStart(t, b, "ann", 1, 30*time.Second)
	if !b.WaitLog(`"msg":"run lock taken"`, 30*time.Second) {
		t.Fatalf("the other fleet's agent took no lock\n%s", b.Tail(30))
	}
	if l := lockOf(t, w, "ann"); l.Holder != owner2 || !l.Expire.After(time.Now()) {
		t.Errorf("ann's lock: %+v, want held by the other fleet's agent %s", l, owner2)
	}
	for _, p := range []*proctest.Proc{a, b} {
		p.Term()
		if code := p.Wait(30 * time.Second); code != cmd.ExitOK && code != cmd.ExitError {
			t.Errorf("%s exit %d after SIGTERM\n%s", p.Name, code, p.Tail(20))
		}
	}
	w.Check(proctest.CheckOptions{Unfinished: true}).Require(t)
}
