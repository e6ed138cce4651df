package cmd_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/busytest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// crashScenario parameterises TestRun_CrashSafety.
type crashScenario struct {
	couch   bool
	kills   int           // SIGKILLs to land
	initial int           // transfers enqueued at first
	more    int           // transfers added whenever an agent drains before its kill
	budget  time.Duration // wall-clock bound of the kill loop on an idle machine (scaled to this one)
	wait    time.Duration // how long a kill waits for its trigger's log line
}

// flags are the arguments of every agent of the scenario: small jobs, so
// there are many of them and kills land between them. The lock and the
// leases last long: a restart on this host takes a killed agent's lock over
// at once, and its claims back, so nothing waits for them to expire, and a
// busy machine cannot make a live agent lose them.
func (sc crashScenario) flags() []string {
	// claims of 25 fill two jobs of 10 and hold 5 for the next round: some
	// transfers stay claimed without a submit_sid for a while
	return []string{"--max-files-per-job", "10", "--batch-size", "25", "--lock-ttl", "1m", "--lease-ttl", "2m"}
}

// trigger is when a kill lands: delay after the first log line containing
// after (or after the start when after is empty, or after the scenario's
// wait when the line does not come).
type trigger struct {
	after string
	delay time.Duration
}

// submitted is the log line written when the submit_sids of a claim's
// jobs are written and the jobs are being sent to FTS, before their commit
// (FTS answers in 20 ms: a kill soon after lands in that window, and on a
// claim that holds transfers over for the next one, also finds those
// claimed without a submit_sid).
const submitted = `"msg":"submit_sid written; sending to FTS"`

// killTrigger draws the moment of the next kill: during start-up; while
// the first transfers are claimed; right after an FTS submission (before
// or during a commit: the window the submit_sid protects); during the
// recording of outcomes; or anywhere later (monitoring, sleeping between
// passes).
func killTrigger(rng *rand.Rand) trigger {
	ms := func(n int) time.Duration { return time.Duration(rng.IntN(n)) * time.Millisecond }
	switch p := rng.IntN(100); {
	case p < 10:
		return trigger{delay: ms(300)}
	case p < 25:
		return trigger{after: "run lock taken", delay: ms(60)} // the first claims
	case p < 50:
		return trigger{after: submitted, delay: ms(25)}
	case p < 70:
		return trigger{after: `"msg":"outcome recorded"`, delay: ms(10)}
	default:
		return trigger{after: "run lock taken", delay: ms(800)}
	}
}

// TestRun_CrashSafety kills `aso run` with SIGKILL at random moments spread
// over every phase (drawn with a fixed seed by killTrigger; restarts find
// submissions without commit, active jobs and outcomes to record), restarts
// it each time (the restart takes the dead agent's lock over at once: it
// never exits 3), then lets a last run drain the queue, and checks from
// outside that nothing was lost or submitted twice.
func TestRun_CrashSafety(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	t.Run("memfile", func(t *testing.T) {
		runCrashScenario(t, crashScenario{kills: 50, initial: 250, more: 25, budget: 150 * time.Second, wait: 700 * time.Millisecond})
	})
	t.Run("couchdb", func(t *testing.T) {
		// the PouchDB test server is slower: fewer kills, more patience
		runCrashScenario(t, crashScenario{couch: true, kills: 15, initial: 80, more: 20, budget: 150 * time.Second, wait: 2 * time.Second})
	})
}

func runCrashScenario(t *testing.T, sc crashScenario) {
	const user = "carol"
	// FTS answers in 20 ms, so the window between a job's submit_sid and
	// its commit is wide enough for kills to land in
	sim := fastSim(21)
	sim.Latency = 20 * time.Millisecond
	w := proctest.New(t, proctest.Options{Couch: sc.couch, Sim: sim, Seed: 21})
	w.AddMix(user, sc.initial)
	rng := rand.New(rand.NewPCG(2026, 11))
	phases := map[string]int{}
	var kills, takeovers, drained int
	var windows killWindows
	var next *trigger // the moment of the next kill
	budget := busytest.Scale(sc.budget)
	deadline := time.Now().Add(budget)
	for kills < sc.kills {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d kills within %s", kills, sc.kills, budget)
		}
		if next == nil {
			tr := killTrigger(rng)
			next = &tr
			if tr.after == submitted {
				w.AddMix(user, 20) // something to submit, however far the queue is
			}
		}
		trigger := *next
		p := w.StartAgent(user, sc.flags()...)
		if trigger.after != "" {
			p.WaitLog(trigger.after, sc.wait)
		}
		delay := trigger.delay
		select {
		case <-p.Done():
		case <-time.After(delay):
			p.Kill()
		}
		if p.WaitLog("run lock taken over", 0) {
			takeovers++
		}
		switch {
		case p.Signaled():
			next = nil
			kills++
			phases[p.LastPhase()]++
			windows.add(t, w, user)
		case p.Code() == cmd.ExitOK:
			next = nil
			drained++
			w.AddMix(user, sc.more)
		default:
			t.Fatalf("%s exited %d\n%s", p.Name, p.Code(), p.Tail(60))
		}
	}
	final := w.StartAgent(user, sc.flags()...)
	if code := final.Wait(busytest.Scale(time.Minute)); code != cmd.ExitOK {
		t.Fatalf("the final run exited %d\n%s", code, final.Tail(60))
	}
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%d kills (last log line's phase: %s); kills that left transfers claimed before submission: %d, between submit_sid and commit: %d, finished in FTS but not recorded: %d; %d restarts took a dead agent's lock over; %d early drains; final run %s",
		kills, histogram(phases), windows.claimed, windows.uncommitted, windows.unrecorded, takeovers, drained, final.Runtime().Round(time.Millisecond))
	t.Logf("%s", r)
	r.Require(t)
	if r.Done == 0 || r.Failed == 0 {
		t.Errorf("want done and failed transfers: %s", r)
	}
	if takeovers == 0 {
		t.Errorf("no restart took a killed agent's lock over: the takeover was not exercised")
	}
	if windows.claimed == 0 || windows.uncommitted == 0 || windows.unrecorded == 0 {
		t.Errorf("the kills did not cover every window: claimed %d, uncommitted %d, unrecorded %d", windows.claimed, windows.uncommitted, windows.unrecorded)
	}
}

// killWindows counts the kills by what they interrupted, judged from the
// store and the simulator right after the kill.
type killWindows struct {
	claimed     int // transfers acquired without submit_sid: killed between claim and submission
	uncommitted int // acquired with submit_sid: killed between the sid and the commit
	unrecorded  int // submitted, while FTS has finished them: killed before recording
}

func (k *killWindows) add(t testing.TB, w *proctest.World, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := w.Store().List(ctx, state.Filter{User: user, States: []state.State{state.StateAcquired, state.StateSubmitted}})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	ended := map[string]bool{} // job/transfer of files FTS has ended
	for _, f := range w.Sim.Files() {
		if f.Finished != nil {
			ended[f.JobID+"/"+proctest.TransferID(f)] = true
		}
	}
	var c, u, r bool
	for _, tr := range ts {
		switch {
		case tr.State == state.StateAcquired && tr.SubmitSID == "":
			c = true
		case tr.State == state.StateAcquired:
			u = true
		case ended[tr.FTSJob+"/"+tr.ID]:
			r = true
		}
	}
	k.claimed += b2i(c)
	k.uncommitted += b2i(u)
	k.unrecorded += b2i(r)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func histogram(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestRun_PausedAgentLosesOwnership freezes an agent with SIGSTOP at random
// moments for longer than its lock and leases live, lets a second agent take
// the user over, then resumes the first: it must notice that it lost the
// lock and stop with an error, while the second drains the queue; the next
// run finds every invariant intact. (On memfile, an agent frozen inside a
// store call holds the file lock, so the second waits for it and then finds
// the first's run lock renewed: it exits 3, and the first either finishes
// the work or stops on its own expired lock, leaving it to the next run;
// or the first, checking its write fence under the file lock, stops before
// writing, and the second takes the user over.)
func TestRun_PausedAgentLosesOwnership(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		runPauseScenario(t, couch, 4)
	})
}

func runPauseScenario(t *testing.T, couch bool, rounds int) {
	const user = "frank"
	w := proctest.New(t, proctest.Options{Couch: couch, Sim: fastSim(41), Seed: 41})
	rng := rand.New(rand.NewPCG(7, 7))
	// the frozen agent's lock and leases must be waited out: as short as a
	// live agent on this machine renews in time (scaled to its load)
	lockTTL, leaseTTL := busytest.Scale(2*time.Second), busytest.Scale(3*time.Second)
	args := []string{"--max-files-per-job", "5", "--lock-ttl", lockTTL.String(), "--lease-ttl", leaseTTL.String()}
	patience := busytest.Scale(time.Minute)
	takeovers := 0
	for round := 0; round < rounds; round++ {
		w.AddMix(user, 40)
		a := w.StartAgent(user, args...)
		tr := killTrigger(rng)
		if tr.after != "" {
			a.WaitLog(tr.after, busytest.Scale(2*time.Second))
		}
		time.Sleep(tr.delay) // the random moment of the pause
		a.Pause()
		// it renewed its lock and leases at the latest just now: both have
		// ended once the longer TTL has passed
		time.Sleep(max(lockTTL, leaseTTL) + 100*time.Millisecond)
		b := w.StartAgent(user, args...)
		took := b.WaitLog("run lock taken", busytest.Scale(5*time.Second))
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond) // the random moment of the resumption
		a.Resume()
		ca, cb := a.Wait(patience), b.Wait(patience)
		switch {
		case took:
			takeovers++
			if ca == cmd.ExitOK || ca == cmd.ExitLocked || cb != cmd.ExitOK {
				t.Errorf("round %d: after the takeover the resumed agent exited %d (want an error for the lost lock), the new one %d (want 0)\n%s\n%s",
					round, ca, cb, a.Tail(20), b.Tail(20))
			}
		case (ca == cmd.ExitError || ca == cmd.ExitTempFail) && cb == cmd.ExitOK:
			// memfile: frozen holding the file lock, the first found its
			// run lock expired once it resumed, before writing, and
			// stopped; the second, waiting for the file lock, then took
			// the user over
		case (ca != cmd.ExitOK && ca != cmd.ExitError && ca != cmd.ExitTempFail) || cb != cmd.ExitLocked:
			t.Errorf("round %d: without a takeover the agents exited %d and %d, want 0, or 1 or 75 (its lock expired while frozen) and %d\n%s\n%s",
				round, ca, cb, cmd.ExitLocked, a.Tail(20), b.Tail(20))
		}
		// whatever a stopped agent left is the next run's
		w.RunToEnd(user, patience, args...)
		r := w.Check(proctest.CheckOptions{})
		t.Logf("round %d (pause after %q + %s, takeover %v): %s", round, tr.after, tr.delay, took, r)
		if !r.OK() {
			r.Require(t)
			t.Fatalf("resumed agent's log:\n%s", a.Tail(60))
		}
	}
	if takeovers == 0 {
		t.Errorf("no round had a takeover: the lost-lock path was not exercised")
	}
}
