package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// exitCodeError carries the exit code of `run --all-users`.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

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

// fleetAgents are a fleet's slots: the agent processes it runs, how it
// starts them, and how long each freed slot waited for the next agent.
type fleetAgents struct {
	o    *RunOptions
	g    *Globals
	log  *logrus.Entry
	exe  string
	base []string // the arguments of every agent, before the per-user ones
	// checked is what the fleet's opening of CouchDB learnt, handed to
	// the agents (nil: another store)
	checked *couch.Checked
	view    *fleetView
	stop    time.Time // --max-runtime: no agent starts after it; zero: none

	running map[string]*child
	pids    pidSet // of the running agents, for the signal watcher
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

func newFleetAgents(o *RunOptions, g *Globals, log *logrus.Entry, exe string, base []string, view *fleetView) *fleetAgents {
	return &fleetAgents{o: o, g: g, log: log, exe: exe, base: base, view: view,
		running: map[string]*child{}, ended: make(chan *child, o.Fleet.MaxAgents)}
}

// free is how many slots no agent runs in.
func (a *fleetAgents) free() int { return a.o.Fleet.MaxAgents - len(a.running) }

// pastStop reports whether the stop time (--max-runtime) has passed.
func (a *fleetAgents) pastStop() bool { return !a.stop.IsZero() && !time.Now().Before(a.stop) }

// reaped frees the slot of the agent c, which has ended, and ends its
// line in the progress view.
func (a *fleetAgents) reaped(c *child) {
	delete(a.running, c.user.User)
	a.freed = append(a.freed, c.ended) // idle from the agent's exit on
	a.view.ended(c.user.User)
}

// start starts the agent of u in a process group of its own (so that
// a second signal can kill it with its gfal-rm), its output read line by
// line into the fleet's log; byRound says whether a discovery round
// started it, or a refill from the backlog.
func (a *fleetAgents) start(ctx context.Context, u state.UserDue, h handoff, byRound bool) error {
	args, err := a.args(u.User, h)
	if err != nil {
		return err
	}
	c := &child{user: u, handoff: h, cmd: exec.Command(a.exe, args...)}
	out := &logRelay{log: a.g.Log, user: u.User}
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
		return fmt.Errorf("start %s: %w", a.exe, err)
	}
	closeAll(c.cmd.ExtraFiles...) // the agent's end
	c.started = time.Now()
	pid := c.cmd.Process.Pid
	a.pids.add(pid)
	a.running[u.User] = c
	a.started++
	a.log.WithFields(logrus.Fields{FieldUser: u.User, "pid": pid, "owner": h.Owner, "waiting_since": u.Since.UTC().Format(time.RFC3339),
		"queued": u.Queued, "active": u.Active, "slot_free_s": a.slotTaken(byRound).Seconds(), "filled_by": filledBy(byRound)}).Info("agent started")
	read := make(chan struct{})
	if progress != nil {
		a.view.started(u.User)
		go func() { defer close(read); a.view.read(u.User, progress) }()
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
func (a *fleetAgents) slotTaken(byRound bool) time.Duration {
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
func (a *fleetAgents) args(u string, h handoff) ([]string, error) {
	args := append([]string(nil), a.base...)
	args = append(args, "--user", u, "--log-format", "json", "--progress", "never", "--fleet-agent")
	if h.Owner != "" {
		args = append(args, "--fleet-owner", h.Owner)
	}
	if a.checked != nil {
		id, err := json.Marshal(a.checked.Identity)
		if err != nil {
			return nil, err
		}
		args = append(args, "--fleet-read-quorum", fmt.Sprint(a.checked.ReadQuorum), "--fleet-couch-identity", string(id))
	}
	if a.view.on() {
		args = append(args, "--progress-fd", fmt.Sprint(progressFD))
	}
	if !a.stop.IsZero() {
		left := max(time.Until(a.stop).Round(time.Second), time.Second)
		args = append(args, "--max-runtime", left.String())
	}
	for _, t := range []struct{ flag, value string }{
		{"--proxy", a.o.FTS.Proxy}, {"--token-file", a.o.FTS.TokenFile}, {"--metrics-file", a.o.MetricsFile},
		{"--storage-token-file", a.o.Beyond.TokenFile}, {"--report", a.o.Beyond.Report},
	} {
		if !strings.Contains(t.value, userTemplate) {
			continue
		}
		v, err := expandUser(t.value, u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.flag, err)
		}
		args = append(args, t.flag, v)
	}
	return args, nil
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
func (a *fleetAgents) progressPipe(c *child) (*os.File, error) {
	if !a.view.on() {
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
		return ExitError
	}
	if code := c.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	if err == nil {
		return ExitOK
	}
	return ExitError
}

// killOnSecondSignal passes the first stop signal (which cancelled ctx) on
// to every agent as SIGTERM, so that each stops gracefully, and kills every
// agent's whole process group (gfal-rm included) on the next one. The
// returned function stops watching.
func (a *fleetAgents) killOnSecondSignal(ctx context.Context) func() {
	return onStopSignals(ctx, func() {
		pids := a.pids.list()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		a.log.WithField("agents", len(pids)).Info("stop signal passed on to the agents; a second one kills them")
	}, func() {
		for _, pid := range a.pids.list() {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		fmt.Fprintln(a.g.Stderr, "aso: second signal: agents killed with their process groups, exiting at once")
		os.Exit(ExitError)
	})
}

// pidSet is the process IDs of the running agents, for the signal
// watcher.
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

// logRelay turns the output of an agent into lines of the fleet's log,
// each carrying the agent's user. The agent logs JSON (see fleetAgents.args):
// each line keeps its level, message, time and fields; other lines (the
// queue summary, an error message) are logged at info.
type logRelay struct {
	log  *logrus.Logger
	user string
	mu   sync.Mutex
	buf  []byte
	// last is the agent's last error: its final "aso: ..." line (kept for
	// the fleet's report of the agent's end, not logged on its own), else
	// its last log line at error.
	last      string
	finalLine bool
}

// lastError returns the agent's last error, "" if none.
func (r *logRelay) lastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// maxRelayLine bounds a line kept whole; a longer one is logged in pieces.
const maxRelayLine = 1 << 20

func (r *logRelay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			if len(r.buf) > maxRelayLine {
				r.line(r.buf)
				r.buf = r.buf[:0]
			}
			return len(p), nil
		}
		r.line(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
}

func (r *logRelay) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		r.line(r.buf)
		r.buf = nil
	}
}

func (r *logRelay) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var fields map[string]any
	if json.Unmarshal(b, &fields) != nil || fields == nil {
		if msg, ok := strings.CutPrefix(string(b), "aso: "); ok {
			r.last, r.finalLine = msg, true // the agent's exit: see fleet.reap
			return
		}
		if r.finalLine { // the rest of a message of several lines
			r.last += " " + strings.TrimSpace(string(b))
			return
		}
		r.log.WithField(FieldUser, r.user).Info(string(b))
		return
	}
	lvl, err := logrus.ParseLevel(fmt.Sprint(fields["level"]))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	msg, _ := fields["msg"].(string)
	e := r.log.WithFields(nil)
	if ts, ok := fields["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			e = e.WithTime(t)
		}
	}
	for _, k := range []string{"level", "msg", "time"} {
		delete(fields, k)
	}
	if lvl <= logrus.ErrorLevel && !r.finalLine {
		r.last = msg
	}
	if s, ok := fields[logrus.ErrorKey].(string); ok {
		delete(fields, logrus.ErrorKey)
		e = e.WithError(errors.New(s))
		if lvl <= logrus.ErrorLevel && !r.finalLine {
			r.last += ": " + s
		}
	}
	fields[FieldUser] = r.user
	e.WithFields(fields).Log(lvl, msg)
}
