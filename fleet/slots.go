package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/state"
)

// child is one running agent process of the fleet.
type child struct {
	user    state.UserDue
	handoff handoff // the run lock the fleet took for the agent
	cmd     *exec.Cmd
	started time.Time
	ended   time.Time
	code    int
	out     *logRelay
}

// reason is why the agent failed: the last error it reported.
func (c *child) reason() string { return c.out.lastError() }

func (c *child) runtime() time.Duration { return c.ended.Sub(c.started) }

// slots are a fleet's slots: the agent processes it runs, how it starts
// them, and how long each freed slot waited for the next agent.
type slots struct {
	cfg  *Config
	log  *logrus.Entry
	stop time.Time // MaxRuntime: no agent starts after it; zero: none

	running map[string]*child
	pids    pidSet // of the running agents, for the signals
	ended   chan *child
	started int
	// freed holds when each slot freed by an ended agent was freed, oldest
	// first, until an agent takes it; maxSlotWait is the longest a freed
	// slot waited (a measure of how fast users are picked up).
	freed       []time.Time
	maxSlotWait time.Duration
	// maxBacklogWait is the longest a freed slot waited that the backlog
	// filled between rounds (see refill): the wait of a slot that a
	// round filled includes the wait for the round, when no user was left.
	maxBacklogWait time.Duration
}

func newSlots(cfg *Config, log *logrus.Entry) *slots {
	return &slots{cfg: cfg, log: log, running: map[string]*child{}, ended: make(chan *child, cfg.MaxAgents)}
}

// free is how many slots no agent runs in.
func (a *slots) free() int { return a.cfg.MaxAgents - len(a.running) }

// pastStop reports whether the stop time (MaxRuntime) has passed.
func (a *slots) pastStop() bool { return !a.stop.IsZero() && !time.Now().Before(a.stop) }

// reaped frees the slot of the agent c, which has ended, and ends its
// line in the progress view.
func (a *slots) reaped(c *child) {
	delete(a.running, c.user.User)
	a.freed = append(a.freed, c.ended) // idle from the agent's exit on
	if a.cfg.View != nil {
		a.cfg.View.Ended(c.user.User)
	}
}

// start starts the agent of u in a process group of its own (so that
// a second signal can kill it with its gfal-rm), its output read line by
// line into the fleet's log; byRound says whether a discovery round
// started it, or a refill from the backlog.
func (a *slots) start(ctx context.Context, u state.UserDue, h handoff, byRound bool) error {
	args, err := a.args(u.User, h)
	if err != nil {
		return err
	}
	c := &child{user: u, handoff: h, cmd: exec.Command(a.cfg.Exe, args...)}
	out := &logRelay{log: a.cfg.Log, user: u.User}
	c.out = out
	c.cmd.Stdout, c.cmd.Stderr = out, out
	c.cmd.SysProcAttr = agentProcAttr()
	// a gfal-rm left behind by a killed agent must not hold the fleet
	c.cmd.WaitDelay = 5 * time.Second
	progress, err := a.progressPipe(c)
	if err != nil {
		return err
	}
	if err := c.cmd.Start(); err != nil {
		closeAll(c.cmd.ExtraFiles...)
		closeAll(progress)
		return fmt.Errorf("start %s: %w", a.cfg.Exe, err)
	}
	closeAll(c.cmd.ExtraFiles...) // the agent's end
	c.started = time.Now()
	pid := c.cmd.Process.Pid
	a.pids.add(pid)
	a.running[u.User] = c
	a.started++
	a.log.WithFields(logrus.Fields{agent.FieldUser: u.User, "pid": pid, "owner": h.Owner, "waiting_since": u.Since.UTC().Format(time.RFC3339),
		"queued": u.Queued, "active": u.Active, "slot_free_s": a.slotTaken(byRound).Seconds(), "filled_by": filledBy(byRound)}).Info("agent started")
	read := make(chan struct{})
	if progress != nil {
		a.cfg.View.Started(u.User)
		go func() {
			defer close(read)
			readPasses(progress, func(ps agent.PassStats) { a.cfg.View.Pass(u.User, ps) })
		}()
	} else {
		close(read)
	}
	go func() {
		err := c.cmd.Wait()
		a.pids.remove(pid)
		out.flush()
		select { // the agent's last pass, unless something else holds the pipe
		case <-read:
		case <-time.After(c.cmd.WaitDelay):
		}
		c.ended = time.Now()
		c.code = processExitCode(c.cmd, err)
		a.ended <- c
	}()
	if ctx.Err() != nil {
		// a signal came while starting: pass it on
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	return nil
}

// slotTaken records that an agent took a slot, filled by a round or else
// from the backlog, and returns how long the slot had been free (0 for
// one never used).
func (a *slots) slotTaken(byRound bool) time.Duration {
	if len(a.freed) == 0 {
		return 0
	}
	w := time.Since(a.freed[0])
	a.freed = a.freed[1:]
	a.maxSlotWait = max(a.maxSlotWait, w)
	if !byRound {
		a.maxBacklogWait = max(a.maxBacklogWait, w)
	}
	return w
}

// args are the arguments of the agent of user u, which runs under
// the owner ID of h if h holds one: the fleet's own, then the per-user
// ones, which come last and so win.
func (a *slots) args(u string, h handoff) ([]string, error) {
	args := append([]string(nil), a.cfg.Args...)
	args = append(args, "--user", u, "--log-format", "json", "--progress", "never")
	ho := Handover{Agent: true, Owner: h.Owner, Couch: a.cfg.Couch}
	if a.cfg.View != nil {
		ho.ProgressFD = progressFD
	}
	args = append(args, ho.Args()...)
	if !a.stop.IsZero() {
		left := max(time.Until(a.stop).Round(time.Second), time.Second)
		args = append(args, "--max-runtime", left.String())
	}
	for _, fl := range a.cfg.PerUser {
		if !strings.Contains(fl.Value, UserTemplate) {
			continue
		}
		v, err := expandUser(fl.Value, u)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", fl.Name, err)
		}
		args = append(args, "--"+fl.Name, v)
	}
	return args, nil
}

// expandUser replaces UserTemplate in a path template by u, refusing a
// user name that would make it name another directory.
func expandUser(template, u string) (string, error) {
	if u == "" || u == "." || u == ".." || strings.ContainsAny(u, "/\x00") || strings.HasPrefix(u, "-") {
		return "", fmt.Errorf("user %q cannot be put in a file name", u)
	}
	return strings.ReplaceAll(template, UserTemplate, u), nil
}

// filledBy names what started an agent, in its "agent started" line.
func filledBy(byRound bool) string {
	if byRound {
		return "round"
	}
	return "backlog"
}

// progressPipe gives the agent c a pipe to write its passes to, when the
// fleet shows progress, and returns the fleet's end (nil: none).
func (a *slots) progressPipe(c *child) (*os.File, error) {
	if a.cfg.View == nil {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("a pipe for the agent's progress: %w", err)
	}
	c.cmd.ExtraFiles = []*os.File{w} // descriptor progressFD
	return r, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// processExitCode is the exit code of a finished agent; an agent ended by
// a signal counts as an error.
func processExitCode(c *exec.Cmd, err error) int {
	if c.ProcessState == nil {
		return exitcode.Error
	}
	if code := c.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	if err == nil {
		return exitcode.OK
	}
	return exitcode.Error
}

// terminate passes a stop on to every agent as SIGTERM, so that each
// stops gracefully.
func (a *slots) terminate() {
	pids := a.pids.list()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	a.log.WithField("agents", len(pids)).Info("stop signal passed on to the agents; a second one kills them")
}

// kill kills every agent's whole process group (gfal-rm included).
func (a *slots) kill() {
	for _, pid := range a.pids.list() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// pidSet is the process IDs of the running agents, for the signals.
type pidSet struct {
	mu   sync.Mutex
	pids map[int]bool
}

func (s *pidSet) add(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pids == nil {
		s.pids = map[int]bool{}
	}
	s.pids[pid] = true
}

func (s *pidSet) remove(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pids, pid)
}

func (s *pidSet) list() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.pids))
	for pid := range s.pids {
		out = append(out, pid)
	}
	return out
}
