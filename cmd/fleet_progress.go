package cmd

import (
	"sync"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/eta"
	"github.com/asyncstageout/aso/state"
)

// fleetView shows the progress of a fleet's agents (fleet.View): a line per running
// agent and a line for all of them, from the passes each agent writes to
// its pipe and the queues of the last discovery round (the fleet's own
// DueUsers query: the agents read nothing for it).
type fleetView struct {
	con *console

	mu     sync.Mutex
	agents map[string]*agentProgress
	queued map[string]int // of the last discovery round
	rate   *eta.Meter     // of every agent's finished transfers since the fleet started
	all    *liveLine
}

// agentProgress is one agent's run as the fleet sees it.
type agentProgress struct {
	run     runProgress
	line    *liveLine
	running bool
}

func newFleetView(con *console) *fleetView {
	v := &fleetView{con: con, agents: map[string]*agentProgress{}, queued: map[string]int{}, rate: eta.New(time.Now(), 0)}
	if con.live() {
		v.all = con.footer("all", v.allText)
		con.show()
	}
	return v
}

// on reports whether the view shows anything: when it does not, the
// agents are given no pipe.
func (v *fleetView) on() bool { return v.con.live() || v.con.plain() }

// Round records the queue of every user with due work.
func (v *fleetView) Round(due []state.UserDue) {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.queued)
	for _, u := range due {
		v.queued[u.User] = u.Queued
	}
}

// Started adds a line for the agent of user.
func (v *fleetView) Started(user string) {
	v.mu.Lock()
	a := v.agents[user]
	if a == nil {
		a = &agentProgress{run: newRunProgress(time.Now())}
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

// Pass adds a pass of user's agent.
func (v *fleetView) Pass(user string, ps agent.PassStats) {
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
	v.rate.Observe(sum.finished())
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

// Ended removes the line of user's agent; its counts stay in the total.
func (v *fleetView) Ended(user string) {
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
	s := newRunProgress(time.Time{}) // its rate is the fleet's (textOf)
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
