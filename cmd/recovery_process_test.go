package cmd_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// TestRunProcess_TakesBackAfterSIGKILL: an agent SIGKILLed once it wrote
// the submission IDs of its first jobs leaves its run lock live for ten
// minutes and its claims under 15-minute leases. The next run, on the same
// host, finds the lock's holder gone and takes the lock over at once (it
// neither exits 3 nor waits for the lock to expire), takes the claims back
// (it does not wait the leases out), adopts or submits them exactly once,
// and drains the queue with every invariant intact; the lock's record and
// the transfers' histories say who took over from whom.
func TestRunProcess_TakesBackAfterSIGKILL(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		const user = "gina"
		sim := fastSim(43)
		sim.Latency = 400 * time.Millisecond // the submission is in flight when the kill lands
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: sim, Seed: 43})
		w.AddMix(user, 60)
		args := []string{"--max-files-per-job", "5", "--batch-size", "20", "--lock-ttl", "10m", "--lease-ttl", "15m"}
		a := w.StartAgent(user, args...)
		if !a.WaitLog("submit_sid written", time.Minute) {
			t.Fatalf("the first agent wrote no submit_sid:\n%s", a.Tail(20))
		}
		a.Kill()
		dead := ownerOf(t, a)

		held, err := w.Store().List(context.Background(), state.Filter{User: user, States: []state.State{state.StateAcquired}})
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, tr := range held {
			if tr.LeaseExpires.After(time.Now().Add(10 * time.Minute)) {
				live++
			}
		}
		if live == 0 {
			t.Fatalf("the killed agent left no claim under a live lease (%d acquired): nothing to take back", len(held))
		}
		if l := userLocksAs(t, invocation{env: w.Env}, "--state="+w.StateURL, user).Locks[0]; !l.Held || l.Holder != dead || l.Process != "dead" {
			t.Fatalf("status of the killed agent's lock: %+v, want held by %s, process dead", l, dead)
		}

		start := time.Now()
		p := w.StartAgent(user, args...)
		if code := p.Wait(2 * time.Minute); code != cmd.ExitOK {
			t.Fatalf("the next run exited %d, want 0 (the dead holder's lock taken over)\n%s", code, p.Tail(30))
		}
		if !hasLog(p, "run lock taken over from an agent that is no longer running", "holder", dead) {
			t.Errorf("the next run did not log the takeover from %s:\n%s", dead, p.Tail(30))
		}
		if !p.WaitLog("took back the claims", 0) {
			t.Errorf("the next run did not take back the %d claims:\n%s", live, p.Tail(20))
		}
		l := userLocksAs(t, invocation{env: w.Env}, "--state="+w.StateURL, user).Locks[0]
		if l.Held || l.LastRun == nil || l.LastRun.ExitCode != 0 || !strings.HasPrefix(l.LastRun.TookOver, dead+" (process ") {
			t.Errorf("lock after the run: %+v (last run %+v), want its record naming %s as taken over", l, l.LastRun, dead)
		}
		r := w.Check(proctest.CheckOptions{})
		t.Logf("%d claims taken back; drained in %s: %s", live, time.Since(start).Round(time.Millisecond), r)
		r.Require(t)
	})
}

// TestRunProcess_TakeOverOnlyOfTheDead: a run never takes over the lock of
// a holder that runs on this host, nor of one on another host (which this
// host cannot check): it exits 3 at once, naming the holder, and names
// aso unlock only for a holder it cannot see running. A lock whose holder's
// pid now belongs to another process (the holder's start time differs) is
// the lock of a dead holder, and is taken over.
func TestRunProcess_TakeOverOnlyOfTheDead(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	const user = "ivan"
	w := proctest.New(t, proctest.Options{Sim: slowSim(53), Seed: 53})
	st := "--state=" + w.StateURL
	w.Add(user, proctest.Good, 4)
	args := []string{"--lock-ttl", "10m", "--lease-ttl", "15m"}
	live := w.StartAgent(user, args...)
	if !live.WaitLog(`"msg":"job submitted"`, time.Minute) {
		t.Fatalf("the first agent submitted nothing:\n%s", live.Tail(20))
	}
	owner := ownerOf(t, live)
	h, ok := holder.Parse(owner)
	if !ok || h.Start == 0 || h.Machine == "" || h.PID != live.Pid() {
		t.Fatalf("agent ID %q: %+v, want this host's pid %d, start time and machine", owner, h, live.Pid())
	}
	if l := userLocks(t, st, user).Locks[0]; !l.Held || l.Holder != owner || l.Process != "running" {
		t.Fatalf("status of a running agent's lock: %+v", l)
	}
	refused := w.StartAgent(user, args...)
	if code := refused.Wait(time.Minute); code != cmd.ExitLocked {
		t.Fatalf("a run under a running agent's lock exited %d, want %d\n%s", code, cmd.ExitLocked, refused.Tail(20))
	}
	wantMatch(t, refused.Tail(5), regexp.QuoteMeta(owner)+` until .*: process \d+ runs on this host; that agent is working on this queue`)
	if strings.Contains(refused.Tail(5), "aso unlock") {
		t.Errorf("the refusal under a running owner names aso unlock:\n%s", refused.Tail(5))
	}
	live.Term()
	if code := live.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("the first agent exited %d after SIGTERM\n%s", code, live.Tail(20))
	}

	// a owner on another host, and one of an older agent whose pid runs
	host, _ := os.Hostname()
	for _, c := range []struct{ holder, process, msg string }{
		{"elsewhere.example.org:4242:77-0badf00d-x", "unknown", `which cannot be checked from here; if that agent is dead, .aso unlock ivan --force. releases the lock`},
		{fmt.Sprintf("%s:%d:cafe", host, os.Getpid()), "running", `process \d+ runs on this host; that agent is working on this queue`},
	} {
		holdUserLock(t, w, user, c.holder)
		if l := userLocks(t, st, user).Locks[0]; l.Process != c.process {
			t.Errorf("status of the lock of %s: process %q, want %q", c.holder, l.Process, c.process)
		}
		p := w.StartAgent(user, args...)
		if code := p.Wait(time.Minute); code != cmd.ExitLocked {
			t.Fatalf("a run under the lock of %s exited %d, want %d\n%s", c.holder, code, cmd.ExitLocked, p.Tail(20))
		}
		wantMatch(t, p.Tail(5), regexp.QuoteMeta(c.holder)+` until .*`+c.msg)
		aso(t, "unlock", st, user, "--force").wantCode(t, 0)
	}

	// this test's own pid, with another start time: the pid was reused
	reused := (holder.Holder{Host: h.Host, PID: os.Getpid(), Start: 1, Machine: h.Machine}).ID("beef")
	holdUserLock(t, w, user, reused)
	if l := userLocks(t, st, user).Locks[0]; l.Process != "dead" || !strings.Contains(l.Check, "another time") {
		t.Errorf("status of a lock whose holder's pid was reused: %+v, want process dead", l)
	}
	p := w.StartAgent(user, args...)
	if !p.WaitLog("run lock taken over", time.Minute) || !hasLog(p, "run lock taken over from an agent that is no longer running", "holder", reused) {
		t.Fatalf("the lock of a holder whose pid was reused was not taken over (exit %d):\n%s", p.Code(), p.Tail(20))
	}
	p.Term()
	if code := p.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("the run that took over exited %d after SIGTERM\n%s", code, p.Tail(20))
	}
}

// holdUserLock makes holder take user's free run lock for ten minutes.
func holdUserLock(t testing.TB, w *proctest.World, user, holder string) {
	t.Helper()
	st := w.Store()
	if w.Env != nil { // CouchDB: run locks are the agents' to write
		var err error
		cfg := state.Config{Agent: state.Agent{User: user, Owner: holder}}
		if st, err = couch.Open(context.Background(), couch.Options{URL: w.CouchURL(couch.RoleAgent)}, cfg); err != nil {
			t.Fatal(err)
		}
		defer st.Close()
	}
	if _, err := st.AcquireLock(context.Background(), user, holder, 10*time.Minute); err != nil {
		t.Fatalf("take the lock of %s as %s: %v", user, holder, err)
	}
}

// ownerOf is the agent ID of the agent process p, from its log.
func ownerOf(t testing.TB, p *proctest.Proc) string {
	t.Helper()
	for _, l := range p.LogLines() {
		if l["msg"] == "run lock taken" {
			return fmt.Sprint(l["owner"])
		}
	}
	t.Fatalf("%s did not log the run lock it took:\n%s", p.Name, p.Tail(20))
	return ""
}

// hasLog reports whether p logged msg with field key set to value.
func hasLog(p *proctest.Proc, msg, key, value string) bool {
	for _, l := range p.LogLines() {
		if l["msg"] == msg && fmt.Sprint(l[key]) == value {
			return true
		}
	}
	return false
}
