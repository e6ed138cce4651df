package chaos_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/proctest"
)

// The run steps of the property test: one `aso run` of a user (started
// again, as cron would, while a killed predecessor's lock has not run
// out), with one fault injected at a moment seen from outside.

// runArgs are the arguments of every agent of user: a bounded run, and
// --overwrite for aliasUser (see aliasUser).
func runArgs(user string, extra ...string) []string {
	args := []string{"--max-runtime", "30s"}
	if user == aliasUser {
		args = append(args, "--overwrite")
	}
	return append(args, extra...)
}

// run runs one agent of user and waits for its end; fault, if not nil, is
// called once the agent has started and says what it did ("sigkill ..." if it
// killed the agent). It returns that, for the tally.
func (pw *pworld) run(user string, fault func(p *proctest.Proc) string, extra ...string) string {
	pw.t.Helper()
	for try := 0; ; try++ {
		p := pw.w.StartAgent(user, runArgs(user, extra...)...)
		what := "to the end"
		if fault != nil {
			what = fault(p)
		}
		code := p.Wait(2 * time.Minute)
		switch {
		case strings.HasPrefix(what, "sigkill") && p.Signaled():
			return what
		case code == 3 && try < 5:
			// the run lock of a killed agent runs out in a second (its
			// TTL): cron's next start, not a condition to poll
			time.Sleep(500 * time.Millisecond)
			continue
		case code == 0 || code == 75:
			return what
		case code == 3:
			pw.t.Errorf("%s: the run lock stayed held for %d starts\n%s", p.Name, try+1, p.Tail(10))
			return what
		}
		pw.t.Errorf("%s exited %d (%s)\n%s", p.Name, code, what, p.Tail(30))
		return what
	}
}

// at waits until the agent p reaches the moment ev, seen from outside:
// "start" (its run lock taken, after which it handles signals), "submit"
// or "status" (a submission or status query reaching FTS). arrived must
// be the simulator's Arrival channels taken before p started. It reports
// false if p exited first.
func at(p *proctest.Proc, ev string, arrived map[string]<-chan struct{}) bool {
	if ev == "start" {
		return p.Await(time.Minute, func(l map[string]any) bool { return l["msg"] == "run lock taken" })
	}
	select {
	case <-arrived[ev]:
		return true
	case <-p.Done():
		return false
	case <-time.After(time.Minute):
		return false
	}
}

// runWith runs an agent of user with the fault named kind.
func (pw *pworld) runWith(user, kind string) {
	pw.t.Helper()
	arrivals := func() map[string]<-chan struct{} {
		return map[string]<-chan struct{}{"submit": pw.w.Sim.Arrival("submit"), "status": pw.w.Sim.Arrival("status")}
	}
	moment := []string{"start", "submit", "status"}[pw.rng.IntN(3)]
	if kind != "run" && pw.open(user) == 0 {
		// a fault needs work in flight to meet
		pw.enqueueFresh(user)
		pw.tally["fresh requests before "+kind]++
	}
	var what string
	switch kind {
	case "run":
		what = pw.run(user, nil)
	case "sigterm", "sigint", "sigkill":
		arr := arrivals()
		what = pw.run(user, func(p *proctest.Proc) string {
			if !at(p, moment, arr) {
				return "ended before " + moment
			}
			map[string]func(){"sigterm": p.Term, "sigint": p.Interrupt, "sigkill": p.Kill}[kind]()
			return kind + " at " + moment
		})
	case "lost-job":
		arr := arrivals()
		what = pw.run(user, func(p *proctest.Proc) string { return pw.loseJob(p, arr) })
	case "fts-hang":
		arr := arrivals()
		what = pw.run(user, func(p *proctest.Proc) string { return pw.hang(p, moment, arr) }, "--fts-timeout", "1s", "--phase-timeout", "3s")
	case "failures":
		pw.w.Sim.SetFailureRate(0.6)
		what = "failure rate 0.6: " + pw.run(user, nil)
		pw.w.Sim.SetFailureRate(baseFailureRate)
	case "aso-kill":
		arr := arrivals()
		what = pw.run(user, func(p *proctest.Proc) string {
			if !at(p, "submit", arr) {
				return pw.asoKill(user) + " after the run"
			}
			return pw.asoKill(user) + " during the run"
		})
	default:
		pw.t.Fatalf("unknown run step %q", kind)
	}
	pw.tally[kind+": "+what]++
}

// loseJob makes the simulator lose a job of p's that has not finished,
// once p monitors it.
func (pw *pworld) loseJob(p *proctest.Proc, arr map[string]<-chan struct{}) string {
	if !at(p, "submit", arr) || !at(p, "status", arr) {
		return "ended before a job was monitored"
	}
	for _, f := range pw.w.Sim.Files() {
		if f.Finished == nil {
			pw.w.Sim.LoseJob(f.JobID)
			return "lost a job"
		}
	}
	return "no job left to lose"
}

// hang holds every FTS request past the agent's --fts-timeout (1 s) for
// 1.5 to 3 s, from the moment ev.
func (pw *pworld) hang(p *proctest.Proc, ev string, arr map[string]<-chan struct{}) string {
	if !at(p, ev, arr) {
		return "ended before " + ev
	}
	pw.w.Sim.SetHang(true)
	// the hang's length is the fault itself, not a wait for a condition
	time.Sleep(time.Duration(pw.intn(1500, 3000)) * time.Millisecond)
	pw.w.Sim.SetHang(false)
	return "hung at " + ev
}

// asoKill runs `aso kill` on one to three of user's transfers that have
// not ended.
func (pw *pworld) asoKill(user string) string {
	pw.t.Helper()
	st := pw.states()
	var open []string
	for _, r := range pw.reqs {
		if s, ok := st[r.req.ID()]; ok && r.req.User == user && !s.Terminal() {
			open = append(open, r.req.ID())
		}
	}
	if len(open) == 0 {
		return "nothing to kill"
	}
	pw.rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
	ids := open[:min(len(open), pw.intn(1, 3))]
	pw.seq++
	args := append([]string{"kill", "--state", pw.w.StateURL, "--user", user, "--progress", "never", "--log-format", "json"}, ids...)
	p := pw.w.Start(fmt.Sprintf("kill-%05d", pw.seq), args...)
	if code := p.Wait(time.Minute); code != 0 {
		pw.t.Errorf("aso kill %v exited %d\n%s", ids, code, p.Tail(20))
	}
	return fmt.Sprintf("aso kill of %d", len(ids))
}

// drain runs user's agents without faults until none of user's transfers
// is left unfinished, at most five times: what a queue left behind gets its
// chance to break the invariant too.
func (pw *pworld) drain(user string) {
	pw.t.Helper()
	for range 5 {
		if pw.open(user) == 0 {
			return
		}
		pw.run(user, nil)
	}
}

// open counts user's transfers that have not ended.
func (pw *pworld) open(user string) int {
	n := 0
	for id, s := range pw.states() {
		if !s.Terminal() && pw.userOf(id) == user {
			n++
		}
	}
	return n
}

// userOf is the user of the request with transfer ID id.
func (pw *pworld) userOf(id string) string {
	for _, r := range pw.reqs {
		if r.req.ID() == id {
			return r.req.User
		}
	}
	return ""
}
