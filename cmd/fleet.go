package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// FleetOptions are the flags of `aso run --all-users`.
type FleetOptions struct {
	AllUsers         bool
	MaxAgents        int
	DiscoverInterval time.Duration
	// Agent is set by --all-users on the agents it runs (hidden flag
	// --fleet-agent): an agent of a fleet skips the summary of its queue at
	// the end, which on CouchDB reads the whole database, once per agent.
	Agent bool
	// ProgressFD is set by --all-users on its agents when it shows their
	// progress (hidden flag --progress-fd): the agent writes each pass
	// there (see progressSink).
	ProgressFD int
	// Owner is set by --all-users on its agents (hidden flag
	// --fleet-owner): the owner ID under which the fleet took the user's
	// run lock for the agent, which runs under it (see takeLock).
	Owner string

	// flags are the flags of the run command, for the agents' arguments.
	flags func() *pflag.FlagSet
}

// Defaults of FleetOptions.
const (
	DefaultMaxAgents        = 4
	DefaultDiscoverInterval = 30 * time.Second
)

// userTemplate is replaced by the user's name in the per-user flags of
// `run --all-users`.
const userTemplate = "{user}"

// AddFlags registers the flags of --all-users on cmd.
func (o *FleetOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.AllUsers, "all-users", false, "run one agent process (aso run --user U) for every user with due work, oldest waiting first; {user} in --proxy, --token-file, --metrics-file, --storage-token-file and --report is replaced by the user")
	f.IntVar(&o.MaxAgents, "max-agents", DefaultMaxAgents, "with --all-users: agent processes at once")
	f.DurationVar(&o.DiscoverInterval, "discover-interval", DefaultDiscoverInterval, "with --all-users: look for users with due work this often while agents run (and at once whenever one ends)")
	f.BoolVar(&o.Agent, "fleet-agent", false, "set by --all-users on its agents: one user's agent (whatever --all-users says), no queue summary at the end")
	f.IntVar(&o.ProgressFD, "progress-fd", 0, "set by --all-users on its agents: write each pass as a JSON line to this descriptor")
	f.StringVar(&o.Owner, "fleet-owner", "", "set by --all-users on its agents: the agent ID under which it took the user's run lock for the agent")
	_ = f.MarkHidden("fleet-agent")
	_ = f.MarkHidden("progress-fd")
	_ = f.MarkHidden("fleet-owner")
	o.flags = cmd.Flags
}

// fleet reports whether the run is a fleet's: --all-users, and not one of
// its agents (which may find all-users set in the environment or the
// configuration file it shares with the fleet).
func (o *FleetOptions) fleet() bool { return o.AllUsers && !o.Agent }

// fleet runs the agents of every user with due work: see runFleet.
type fleet struct {
	o      *RunOptions
	g      *Globals
	id     string // this fleet's agent ID, in its log lines
	log    *logrus.Entry
	lister state.Admin
	locker fleetLocker
	exe    string
	base   []string // the arguments of every agent, before the per-user ones
	view   *fleetView
	start  time.Time
	stop   time.Time // --max-runtime: no agent starts after it; zero: none

	running map[string]*child
	pids    pidSet // of the running agents, for the signal watcher
	ended   chan *child
	// drained holds the entry of each user whose last agent exited 0: a
	// user reported again with the same entry has nothing an agent can do
	// (only dependencies waiting, say) and is not run again until it changes.
	drained map[string]state.UserDue
	// notBefore holds users whose agent found the lock held elsewhere or
	// failed for a temporary reason: they are tried again after this time.
	notBefore map[string]time.Time
	// done holds users not to run again: a permanent failure, or any run
	// with --once or --dry-run.
	done map[string]bool
	// heldUntil holds users whose run lock another agent holds, as this
	// round's read of the locks found it, or the fleet's take of the lock
	// since (a race lost): they are left out until that lock expires.
	heldUntil map[string]time.Time

	// freed holds when each slot freed by an ended agent was freed, oldest
	// first, until an agent takes it; maxSlotWait is the longest a freed
	// slot waited (a measure of how fast users are picked up).
	freed       []time.Time
	maxSlotWait time.Duration

	worst, ok, locked, started, lostRaces int
	// heldElsewhere counts the due users of the last round left alone
	// because an agent elsewhere holds their run lock.
	heldElsewhere int
}

// runFleet is `aso run --all-users`: it finds the users with due work in
// one query per round and runs `aso run --user U` for each, at most
// --max-agents at once, oldest waiting first, looking again each time an
// agent ends, until nothing is due or --max-runtime has passed. It exits
// with the most severe exit code of its agents.
func runFleet(ctx context.Context, o *RunOptions, g *Globals) error {
	fo := o.Fleet
	switch {
	case g.userFlagGiven():
		return usagef("--all-users runs every user with due work: do not give --user with it")
	case fo.MaxAgents < 1:
		return usagef("--max-agents %d: want at least 1", fo.MaxAgents)
	case fo.DiscoverInterval <= 0:
		return usagef("--discover-interval %s: want a positive duration", fo.DiscoverInterval)
	case o.Sites == "":
		return usagef("no sites file: give --sites FILE (or ASO_SITES)")
	case o.Beyond.Report != "" && !strings.Contains(o.Beyond.Report, userTemplate):
		return usagef("--report %s: each agent of --all-users writes its own report: put %s in the path", o.Beyond.Report, userTemplate)
	case o.MetricsFile != "" && !strings.Contains(o.MetricsFile, userTemplate):
		return usagef("--metrics-file %s: each agent of --all-users writes its own metrics file: put %s in the path", o.MetricsFile, userTemplate)
	}
	// a broken sites file stops the fleet before any agent starts
	if _, err := srm.LoadSites(o.Sites); err != nil {
		return permanentError{fmt.Errorf("sites file: %w", err)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the aso executable to run the agents: %w", err)
	}
	store, err := g.OpenStore(ctx, state.Config{Agent: state.Agent{Owner: agentID()}})
	if err != nil {
		return err
	}
	defer store.Close()
	lister := store
	id := agentID()
	con := g.openConsole(g.Progress, 0)
	defer con.close()
	f := &fleet{
		o: o, g: g, id: id, log: g.Log.WithField("fleet", id), lister: lister, locker: store, exe: exe,
		base: fo.agentBase(), start: time.Now(), view: newFleetView(con),
		running: map[string]*child{}, ended: make(chan *child, fo.MaxAgents),
		drained: map[string]state.UserDue{}, notBefore: map[string]time.Time{}, done: map[string]bool{}, heldUntil: map[string]time.Time{},
	}
	if o.Agent.MaxRuntime > 0 {
		f.stop = f.start.Add(o.Agent.MaxRuntime)
	}
	defer f.killOnSecondSignal(ctx)()
	err = f.loop(ctx)
	f.wait(ctx)
	con.close()
	f.log.WithFields(logrus.Fields{"agents": f.started, "drained": f.ok, "locked_elsewhere": f.locked, "lost_lock_races": f.lostRaces, "max_slot_wait_s": f.maxSlotWait.Seconds(),
		"exit_code": f.exitCode(), "runtime": time.Since(f.start).Round(time.Millisecond).String()}).Info("fleet finished")
	if err != nil {
		return err
	}
	if code := f.exitCode(); code != ExitOK {
		return exitCodeError{code: code, err: f.summary(code)}
	}
	return nil
}

// loop starts agents until nothing is due, the stop time has passed or ctx
// is cancelled. It returns an error only when the state store cannot be
// read and no agent is running to wait for.
func (f *fleet) loop(ctx context.Context) error {
	tick := time.NewTicker(f.o.Fleet.DiscoverInterval)
	defer tick.Stop()
	failures := 0
	for {
		if ctx.Err() != nil || f.pastStop() {
			return nil
		}
		started, pending, err := f.round(ctx)
		switch {
		case err != nil && len(f.running) == 0:
			if failures++; failures >= 3 || ctx.Err() != nil {
				return err
			}
			f.log.WithError(err).Warn("cannot list the users with due work; trying again")
		case err != nil:
			f.log.WithError(err).Warn("cannot list the users with due work; trying again when an agent ends")
		default:
			failures = 0
		}
		if err == nil && len(f.running) == 0 && started == 0 && pending.IsZero() {
			if f.started == 0 && f.heldElsewhere > 0 {
				f.note(ExitLocked) // every user with due work has an agent elsewhere
			}
			return nil // nothing due that this host can do
		}
		f.sleep(ctx, tick.C, retryAfter(pending, err))
	}
}

// retryAfter is how long to wait before another round when a user waits
// for its retry time (pending) or the store could not be read; 0: no
// such wait.
func retryAfter(pending time.Time, err error) time.Duration {
	switch {
	case !pending.IsZero():
		return max(time.Until(pending), 10*time.Millisecond)
	case err != nil:
		return time.Second
	}
	return 0
}

// sleep waits for an agent to end (and reaps it), the discovery tick, the
// retry time d (if not 0), the stop time, or ctx.
func (f *fleet) sleep(ctx context.Context, tick <-chan time.Time, d time.Duration) {
	var retry <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		retry = t.C
	}
	var stop <-chan time.Time
	if !f.stop.IsZero() {
		t := time.NewTimer(time.Until(f.stop))
		defer t.Stop()
		stop = t.C
	}
	select {
	case <-ctx.Done():
	case c := <-f.ended:
		f.reap(ctx, c)
	case <-tick:
	case <-retry:
	case <-stop:
	}
}

// round reads the users with due work (one query) and starts agents for
// as many as there are free slots. It returns how many it started and,
// when a due user was left waiting for a retry time, the earliest such time.
func (f *fleet) round(ctx context.Context) (int, time.Time, error) {
	qctx, cancel := context.WithTimeout(ctx, f.o.Agent.PhaseTimeout)
	due, err := f.lister.DueUsers(qctx, time.Now())
	cancel()
	if err != nil {
		return 0, time.Time{}, err
	}
	dead := f.readLocks(ctx)
	due = withDeadHolders(due, dead)
	f.spread(due)
	f.view.round(due)
	started := 0
	var pending time.Time
	f.heldElsewhere = 0
	for _, u := range due {
		if len(f.running) >= f.o.Fleet.MaxAgents {
			break
		}
		switch last, ok := f.drained[u.User]; {
		case f.running[u.User] != nil || f.done[u.User]:
			continue
		case ok && sameDue(last, u):
			continue
		}
		if _, gone := dead[u.User]; !gone && (u.LockedUntil.After(time.Now()) || f.heldElsewhereNow(u.User)) {
			// an agent elsewhere works on it (the view or this round's
			// read of the locks says so); if that agent dies, the lock
			// expires and a later round (or run) takes the user
			f.heldElsewhere++
			continue
		}
		if t, ok := f.notBefore[u.User]; ok && time.Now().Before(t) {
			pending = earliest(pending, t)
			continue
		}
		h, err := f.takeLock(ctx, u.User)
		if errors.Is(err, errLostRace) {
			f.heldElsewhere++
			continue
		}
		if err != nil {
			pending = earliest(pending, f.notBefore[u.User])
			continue
		}
		if err := f.startAgent(ctx, u, h); err != nil {
			f.log.WithError(err).WithField(FieldUser, u.User).Error("cannot start the agent of this user")
			f.releaseLock(ctx, u.User, h, &state.RunRecord{Holder: h.Owner, Started: state.At(time.Now()), Ended: state.At(time.Now()), ExitCode: ExitError,
				Error: "the fleet could not start the agent: " + err.Error()})
			f.done[u.User] = true
			f.note(ExitError)
			continue
		}
		started++
	}
	f.log.WithFields(logrus.Fields{"due_users": len(due), "started": started, "running": len(f.running)}).Debug("discovery round")
	return started, pending, nil
}

// spread orders the due users oldest first at the grain of a discovery
// interval, and users that became due within the same interval in an
// order of this fleet's own (a hash of its ID and the user): fleets on
// several hosts that look at the same moment then start different users
// instead of racing for the same run locks.
func (f *fleet) spread(due []state.UserDue) {
	grain := f.o.Fleet.DiscoverInterval
	rank := func(u state.UserDue) uint64 {
		h := fnv.New64a()
		h.Write([]byte(f.id))
		h.Write([]byte{0})
		h.Write([]byte(u.User))
		return h.Sum64()
	}
	slices.SortStableFunc(due, func(a, b state.UserDue) int {
		return cmp.Or(a.Since.Truncate(grain).Compare(b.Since.Truncate(grain)), cmp.Compare(rank(a), rank(b)))
	})
}

// sameDue reports whether two entries of a user show the same work.
func sameDue(a, b state.UserDue) bool {
	return a.Since.Equal(b.Since) && a.Queued == b.Queued && a.Active == b.Active && a.DepsOnly == b.DepsOnly
}

// slotTaken records that an agent took a slot, and returns how long the
// slot had been free (0 for one never used).
func (f *fleet) slotTaken() time.Duration {
	if len(f.freed) == 0 {
		return 0
	}
	w := time.Since(f.freed[0])
	f.freed = f.freed[1:]
	f.maxSlotWait = max(f.maxSlotWait, w)
	return w
}

// reap records how the agent c ended and when its user may run again.
func (f *fleet) reap(ctx context.Context, c *child) {
	delete(f.running, c.user.User)
	f.releaseHandoff(ctx, c)
	f.freed = append(f.freed, time.Now())
	code := c.code
	fields := logrus.Fields{FieldUser: c.user.User, "exit_code": code, "runtime": c.runtime().Round(time.Millisecond).String()}
	why := c.reason()
	if code != ExitOK && why != "" {
		fields["reason"] = why
	}
	f.view.ended(c.user.User)
	f.note(code)
	if f.o.Agent.Once || f.o.Agent.DryRun {
		f.done[c.user.User] = true
	}
	switch code {
	case ExitOK:
		f.ok++
		f.drained[c.user.User] = c.user
		delete(f.notBefore, c.user.User)
		if why != "" { // an agent that exits 0 has no final error line
			fields["last_error"] = why
		}
		f.log.WithFields(fields).Info("agent finished")
	case ExitLocked:
		f.locked++
		f.notBefore[c.user.User] = time.Now().Add(f.lockedBackoff())
		f.log.WithFields(fields).Info("another agent holds this user's run lock; moving on")
	case ExitTempFail:
		f.notBefore[c.user.User] = time.Now().Add(f.o.Fleet.DiscoverInterval)
		f.log.WithFields(fields).Warn(fmt.Sprintf("agent of %s stopped on a temporary error (exit %d): %s; its user is tried again later", c.user.User, code, orUnknown(why)))
	default:
		f.done[c.user.User] = true
		f.log.WithFields(fields).Error(fmt.Sprintf("agent of %s failed (exit %d): %s; its user is not run again by this command", c.user.User, code, orUnknown(why)))
	}
}

// orUnknown is why, or says that the agent gave no reason.
func orUnknown(why string) string {
	if why == "" {
		return "no error line from the agent (see its log lines above)"
	}
	return why
}

// lockedBackoff is how long a user whose lock is held elsewhere is left
// alone: the lock holder renews every third of the lock TTL, so trying
// more often finds it held again.
func (f *fleet) lockedBackoff() time.Duration {
	return min(max(f.o.Agent.LockTTL/3, time.Second), f.o.Fleet.DiscoverInterval)
}

// note records an agent's exit code.
func (f *fleet) note(code int) {
	if severity(code) > severity(f.worst) {
		f.worst = code
	}
}

// exitCode is the fleet's exit code: the most severe of its agents', 3
// only if no agent drained a queue (every user it tried was held by
// another host).
func (f *fleet) exitCode() int {
	if f.worst == ExitLocked && f.ok > 0 {
		return ExitOK
	}
	return f.worst
}

func (f *fleet) summary(code int) error {
	if code == ExitLocked {
		return fmt.Errorf("every user with due work is being worked on by agents elsewhere: %w", state.ErrLocked)
	}
	return fmt.Errorf("%d of %d agents ended with an error (the most severe: exit %d); see their log lines", f.started-f.ok-f.locked, f.started, code)
}

func (f *fleet) pastStop() bool { return !f.stop.IsZero() && !time.Now().Before(f.stop) }

// wait waits for every running agent to end.
func (f *fleet) wait(ctx context.Context) {
	for len(f.running) > 0 {
		f.reap(ctx, <-f.ended)
	}
}

// agentArgs are the arguments of the agent of user u, which runs under
// the owner ID of h if h holds one: the fleet's own, then the per-user
// ones, which come last and so win.
func (f *fleet) agentArgs(u string, h handoff) ([]string, error) {
	args := append([]string(nil), f.base...)
	args = append(args, "--user", u, "--log-format", "json", "--progress", "never", "--fleet-agent")
	if h.Owner != "" {
		args = append(args, "--fleet-owner", h.Owner)
	}
	if f.view.on() {
		args = append(args, "--progress-fd", fmt.Sprint(progressFD))
	}
	if !f.stop.IsZero() {
		left := max(time.Until(f.stop).Round(time.Second), time.Second)
		args = append(args, "--max-runtime", left.String())
	}
	for _, t := range []struct{ flag, value string }{
		{"--proxy", f.o.FTS.Proxy}, {"--token-file", f.o.FTS.TokenFile}, {"--metrics-file", f.o.MetricsFile},
		{"--storage-token-file", f.o.Beyond.TokenFile}, {"--report", f.o.Beyond.Report},
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

// fleetOnly are the flags of the fleet itself, which its agents are not
// given.
var fleetOnly = map[string]bool{"all-users": true, "max-agents": true, "discover-interval": true}

// agentBase returns the arguments every agent of the fleet is given: the
// flags given on the fleet's command line but the fleet's own, so that an
// agent's arguments (in ps, say) do not show --all-users.
func (o *FleetOptions) agentBase() []string {
	args := []string{"run"}
	o.flags().Visit(func(fl *pflag.Flag) {
		if fleetOnly[fl.Name] || fl.Hidden {
			return
		}
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		args = append(args, "--"+fl.Name+"="+v)
	})
	return args
}

// expandUser replaces {user} in a path template by u, refusing a user
// name that would make it name another directory.
func expandUser(template, u string) (string, error) {
	if u == "" || u == "." || u == ".." || strings.ContainsAny(u, "/\x00") || strings.HasPrefix(u, "-") {
		return "", fmt.Errorf("user %q cannot be put in a file name", u)
	}
	return strings.ReplaceAll(template, userTemplate, u), nil
}
