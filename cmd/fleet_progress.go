package cmd

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/state"
)

// progressFD is the descriptor on which an agent of the fleet finds the
// pipe to its fleet (the first of exec.Cmd.ExtraFiles).
const progressFD = 3

// progressSink writes an agent's passes to the fleet that runs it: one
// JSON line of agent.PassStats per pass, on the pipe --progress-fd names.
// The fleet learns each agent's progress for one line a pass, whatever
// the number of transfers and whatever the log level.
type progressSink struct{ enc *json.Encoder }

// progressSink returns the sink of --progress-fd (none without it).
func (o *FleetOptions) progressSink() progressSink {
	if o.ProgressFD <= 0 {
		return progressSink{}
	}
	syscall.CloseOnExec(o.ProgressFD) // gfal-rm must not hold the pipe open
	f := os.NewFile(uintptr(o.ProgressFD), "fleet progress")
	if f == nil {
		return progressSink{}
	}
	return progressSink{enc: json.NewEncoder(f)}
}

// pass writes ps; a fleet that went away is no error of the agent.
func (s progressSink) pass(ps agent.PassStats) {
	if s.enc != nil {
		_ = s.enc.Encode(ps)
	}
}

// fleetView shows the progress of a fleet's agents: a line per running
// agent and a line for all of them, from the passes each agent writes to
// its pipe and the queues of the last discovery round (the fleet's own
// DueUsers query: the agents read nothing for it).
type fleetView struct {
	con *console

	mu     sync.Mutex
	agents map[string]*agentProgress
	queued map[string]int // of the last discovery round
	rate   rateMeter
	all    *liveLine
}

// agentProgress is one agent's run as the fleet sees it.
type agentProgress struct {
	run     runProgress
	line    *liveLine
	running bool
}

func newFleetView(con *console) *fleetView {
	v := &fleetView{con: con, agents: map[string]*agentProgress{}, queued: map[string]int{}}
	if con.live() {
		v.all = con.footer("all", v.allText)
		con.show()
	}
	return v
}

// on reports whether the view shows anything: when it does not, the
// agents are given no pipe.
func (v *fleetView) on() bool { return v != nil && (v.con.live() || v.con.plain()) }

// round records the queue of every user with due work.
func (v *fleetView) round(due []state.UserDue) {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.queued)
	for _, u := range due {
		v.queued[u.User] = u.Queued
	}
}

// started adds a line for the agent of user.
func (v *fleetView) started(user string) {
	v.mu.Lock()
	a := v.agents[user]
	if a == nil {
		a = &agentProgress{run: newRunProgress()}
		v.agents[user] = a
	}
	a.running = true
	v.mu.Unlock()
	if v.con.live() {
		line := v.con.line(user, true, func() string { return v.agentText(user) })
		v.mu.Lock()
		a.line = line
		v.mu.Unlock()
	}
}

// read reads the passes of user's agent from r until the agent closes it.
func (v *fleetView) read(user string, r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var ps agent.PassStats
		if json.Unmarshal(sc.Bytes(), &ps) == nil {
			v.pass(user, ps)
		}
	}
}

// pass adds a pass of user's agent.
func (v *fleetView) pass(user string, ps agent.PassStats) {
	now := time.Now()
	v.mu.Lock()
	a := v.agents[user]
	if a == nil {
		v.mu.Unlock()
		return
	}
	a.run.queued = v.queuedOf(user)
	a.run.add(ps, now)
	sum := v.sum()
	v.rate.observe(now, sum.finished())
	fin, left := a.run.finished(), a.run.left()
	agentText, allText := a.run.text(now), v.textOf(sum, now)
	line, all := a.line, v.all
	v.mu.Unlock()
	if line != nil {
		line.set(int64(fin), int64(fin+left))
	}
	if all != nil {
		all.set(int64(sum.finished()), int64(sum.finished()+sum.left()))
	}
	v.con.printf("progress: %s: %s", user, agentText)
	v.con.printf("progress: all: %s", allText)
}

// ended removes the line of user's agent; its counts stay in the total.
func (v *fleetView) ended(user string) {
	v.mu.Lock()
	a := v.agents[user]
	var line *liveLine
	if a != nil {
		a.running, a.run.total.Active, line = false, 0, a.line
	}
	v.mu.Unlock()
	if line != nil {
		line.end(true)
	}
}

func (v *fleetView) queuedOf(user string) int {
	if n, ok := v.queued[user]; ok {
		return n
	}
	return queueNoneDue
}

// sum adds up every agent's run: the counts of all, the transfers active
// in the running agents, the queues of the last round.
func (v *fleetView) sum() runProgress {
	s := newRunProgress()
	for _, a := range v.agents {
		active := s.total.Active
		s.total.Add(a.run.total)
		s.total.Active = active + a.run.total.Active
	}
	s.queued = 0
	for _, n := range v.queued {
		s.queued += n
	}
	return s
}

func (v *fleetView) textOf(sum runProgress, now time.Time) string {
	sum.rate = v.rate
	return sum.text(now)
}

func (v *fleetView) agentText(user string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if a := v.agents[user]; a != nil {
		return a.run.text(time.Now())
	}
	return ""
}

func (v *fleetView) allText() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	running := 0
	for _, a := range v.agents {
		if a.running {
			running++
		}
	}
	return plural(running, "agent") + " · " + v.textOf(v.sum(), time.Now())
}
