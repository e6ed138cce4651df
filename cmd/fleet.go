package cmd

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
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
	// ReadQuorum is set by --all-users on its agents on CouchDB (hidden
	// flag --fleet-read-quorum): the fleet opened the database and checked
	// its credentials' role; the agent opens it without asking again, with
	// this read quorum (see couch.Options.Checked). -1: not set.
	ReadQuorum int
	// Identity is set with ReadQuorum (hidden flag --fleet-couch-identity,
	// JSON): who the fleet's credentials are, as CouchDB told the fleet,
	// for the agent's report.
	Identity string

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
	f.IntVar(&o.ReadQuorum, "fleet-read-quorum", -1, "set by --all-users on its agents on CouchDB: the database's read quorum, as the fleet found it when it checked the database and the credentials")
	f.StringVar(&o.Identity, "fleet-couch-identity", "", "set by --all-users on its agents on CouchDB: who the credentials are, as the fleet found it (JSON)")
	_ = f.MarkHidden("fleet-owner")
	_ = f.MarkHidden("fleet-read-quorum")
	_ = f.MarkHidden("fleet-couch-identity")
	o.flags = cmd.Flags
}

// fleet reports whether the run is a fleet's: --all-users, and not one of
// its agents (which may find all-users set in the environment or the
// configuration file it shares with the fleet).
func (o *FleetOptions) fleet() bool { return o.AllUsers && !o.Agent }

// fleet runs the agents of every user with due work: see runFleet.
type fleet struct {
	o      *RunOptions
	log    *logrus.Entry
	place  uint64 // this fleet's, in the scores of users: see spread
	start  time.Time
	agents *fleetAgents
	locks  *fleetLocks

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
	// backlog is what the last round found, for the slots freed until
	// the next.
	backlog backlog
	// disc asks for the users with due work beside the loop.
	disc *discoverer
	// lockDone brings the answers of a refill's lock requests; taking
	// (not nil while they are under way) holds the users whose locks
	// they ask for (see lockWork).
	lockDone chan lockWork
	taking   map[string]bool

	outcome fleetOutcome
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
	log := g.Log.WithField("fleet", id)
	view := newFleetView(con)
	f := newFleet(o, id, lister, store, newFleetAgents(o, g, log, exe, fo.agentBase(), view))
	if cs, ok := store.(interface{ Checked() couch.Checked }); ok {
		c := cs.Checked()
		c.Identity = g.couchCred.Identity
		f.agents.checked = &c
	}
	if o.Agent.MaxRuntime > 0 {
		f.agents.stop = f.start.Add(o.Agent.MaxRuntime)
	}
	defer f.agents.killOnSecondSignal(ctx)()
	err = f.loop(ctx)
	f.wait(ctx)
	con.close()
	f.log.WithFields(logrus.Fields{"agents": f.agents.started, "drained": f.outcome.ok, "locked_elsewhere": f.outcome.locked, "lost_lock_races": f.locks.lostRaces,
		"max_slot_wait_s": f.agents.maxSlotWait.Seconds(), "max_slot_wait_backlog_s": f.agents.maxBacklogWait.Seconds(),
		"exit_code": f.outcome.exitCode(), "runtime": time.Since(f.start).Round(time.Millisecond).String()}).Info("fleet finished")
	if err != nil {
		return err
	}
	if code := f.outcome.exitCode(); code != ExitOK {
		return exitCodeError{code: code, err: f.outcome.summary(code, f.agents.started)}
	}
	return nil
}

// loop starts agents until nothing is due, the stop time has passed or ctx
// is cancelled. A discovery round (see round) is asked for at the start,
// whenever no agent runs, and on a tick when one is due (see roundDue);
// its query runs beside the loop (see ask), so that while it runs a slot
// freed takes the next user of the last round's backlog at once (see
// refill). It returns an error only when the state store cannot be read
// and no agent is running to wait for.
func (f *fleet) loop(ctx context.Context) error {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(f.o.Fleet.DiscoverInterval)
	defer tick.Stop()
	failures := 0
	f.disc.ask(qctx)
	for {
		if ctx.Err() != nil || f.agents.pastStop() {
			return nil
		}
		var pending time.Time
		var err error
		if d := f.disc.take(); d != nil {
			var started int
			started, pending, err = f.round(ctx, *d)
			switch {
			case err != nil && len(f.agents.running) == 0:
				if failures++; failures >= 3 || ctx.Err() != nil {
					return err
				}
				f.log.WithError(err).Warn("cannot list the users with due work; trying again")
			case err != nil:
				f.log.WithError(err).Warn("cannot list the users with due work; trying again when an agent ends")
			default:
				failures = 0
			}
			if err == nil && len(f.agents.running) == 0 && started == 0 && pending.IsZero() && f.taking == nil {
				if f.agents.started == 0 && f.heldElsewhere > 0 {
					f.outcome.note(ExitLocked) // every user with due work has an agent elsewhere
				}
				return nil // nothing due that this host can do
			}
		} else if started, p := f.refill(ctx); len(f.agents.running) == 0 && started == 0 {
			f.disc.ask(qctx) // nothing runs: look again now, or end
		} else {
			pending = p
		}
		if f.sleep(ctx, tick.C, retryAfter(pending, err)) && (err != nil || f.roundDue()) {
			f.disc.ask(qctx)
		}
	}
}

// staleBacklog is how many discovery intervals a backlog serves at most
// before a round reads the users again, even while it has users to start.
const staleBacklog = 12

// roundDue reports whether a discovery round is due: a slot is free that
// the backlog cannot fill, or the backlog is staleBacklog intervals old.
// While every slot is busy, or the backlog has users to start, a round
// would start no one that the backlog does not: its query (which reads the
// whole users view, and on a busy server takes seconds) is saved.
func (f *fleet) roundDue() bool {
	if time.Since(f.backlog.at) >= staleBacklog*f.o.Fleet.DiscoverInterval {
		return true
	}
	return f.agents.free() > 0 && !slices.ContainsFunc(f.backlog.due, f.startable)
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

// sleep waits for an agent to end (and reaps it with every other that
// ended meanwhile), the answer of a discovery query (kept by f.disc),
// the discovery tick, the retry time d (if not 0), the stop time, or ctx.
// It reports whether it woke for a tick or a time: false when it woke for
// ended agents, whose slots the backlog fills, or for an answer.
func (f *fleet) sleep(ctx context.Context, tick <-chan time.Time, d time.Duration) bool {
	var retry <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		retry = t.C
	}
	var stop <-chan time.Time
	if !f.agents.stop.IsZero() {
		t := time.NewTimer(time.Until(f.agents.stop))
		defer t.Stop()
		stop = t.C
	}
	select {
	case <-ctx.Done():
	case d := <-f.disc.answers:
		f.disc.got(d)
		return false
	case w := <-f.lockDone:
		f.lockAnswer(ctx, w)
		return false
	case c := <-f.agents.ended:
		f.reap(ctx, c)
		for {
			select {
			case c := <-f.agents.ended:
				f.reap(ctx, c)
			default:
				return false
			}
		}
	case <-tick:
	case <-retry:
	case <-stop:
	}
	return true
}

// spread orders the due users oldest first at the grain of a discovery
// interval (counted from the oldest), and shares them out between the fleets this fleet knows of
// (from the holders of run locks, see readLocks) by rendezvous hashing:
// each user belongs to the fleet with the highest score of the user (see
// fleetScore), whatever set of fleets each knows. Within a grain a fleet
// takes its own users first, best score first; the others' users come
// after its own of the next grain too, in the reverse of their owners'
// order (see backlog.others). Fleets on several hosts that look at the
// same moment then start different users, and meet head-on in another
// fleet's share only once that share outnumbers its owner's slots,
// instead of racing for the same run locks at every start.
func (f *fleet) spread(due []state.UserDue) {
	grain := f.o.Fleet.DiscoverInterval
	type order struct {
		grain time.Time
		score uint64
	}
	key := make(map[string]order, len(due))
	f.backlog.others = map[string]bool{}
	if len(due) == 0 {
		return
	}
	// grains counted from the oldest: the first holds a whole interval's
	// users, enough for the slots of fleets that do not know each other yet
	oldest := slices.MinFunc(due, func(a, b state.UserDue) int { return a.Since.Compare(b.Since) }).Since
	for _, u := range due {
		h := hash64(u.User)
		owner, best := f.place, fleetScore(f.place, h)
		for p := range f.backlog.fleets {
			if sc := fleetScore(p, h); sc > best {
				owner, best = p, sc
			}
		}
		g := oldest.Add(u.Since.Sub(oldest) / grain * grain)
		if owner == f.place {
			key[u.User] = order{g, ^best >> 1} // best score first
			continue
		}
		f.backlog.others[u.User] = true
		key[u.User] = order{g.Add(grain), 1<<63 | best>>1} // worst score first
	}
	slices.SortStableFunc(due, func(a, b state.UserDue) int {
		ka, kb := key[a.User], key[b.User]
		return cmp.Or(ka.grain.Compare(kb.grain), cmp.Compare(ka.score, kb.score))
	})
}

// fleetScore is the score of the user whose hash is h for the fleet at
// place p (see spread).
func fleetScore(p, h uint64) uint64 { return mix64(p ^ h) }

// fleetPlace is what names the fleet that runs as process h in the
// scores of users (see spread): the fleet's agents hold owner IDs of its
// process (see takeLock), so other fleets find it from the lock holders.
func fleetPlace(h state.Holder) uint64 { return hash64(state.HolderID(h, "")) }

// hash64 is a hash of s spread over all 64 bits: FNV-1a, whose high bits
// barely change with the last bytes of short names, then mix64.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return mix64(h.Sum64())
}

// mix64 is splitmix64's finalizer: each bit of x changes about half the
// bits of the result.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// sameDue reports whether two entries of a user show the same work.
func sameDue(a, b state.UserDue) bool {
	return a.Since.Equal(b.Since) && a.Queued == b.Queued && a.Active == b.Active && a.DepsOnly == b.DepsOnly
}

// reap records how the agent c ended and when its user may run again.
func (f *fleet) reap(ctx context.Context, c *child) {
	f.agents.reaped(c)
	f.locks.agentEnded(c)
	code := c.code
	fields := logrus.Fields{FieldUser: c.user.User, "exit_code": code, "runtime": c.runtime().Round(time.Millisecond).String()}
	why := c.reason()
	if code != ExitOK && why != "" {
		fields["reason"] = why
	}
	f.outcome.agentExited(code)
	if f.o.Agent.Once || f.o.Agent.DryRun {
		f.done[c.user.User] = true
	}
	switch code {
	case ExitOK:
		f.drained[c.user.User] = c.user
		delete(f.notBefore, c.user.User)
		if why != "" { // an agent that exits 0 has no final error line
			fields["last_error"] = why
		}
		f.log.WithFields(fields).Info("agent finished")
	case ExitLocked:
		f.notBefore[c.user.User] = time.Now().Add(lockedBackoff(f.o))
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
func lockedBackoff(o *RunOptions) time.Duration {
	return min(max(o.Agent.LockTTL/3, time.Second), o.Fleet.DiscoverInterval)
}

// fleetOutcome is how the fleet's agents ended, for its exit code and
// its last line.
type fleetOutcome struct {
	// worst is the most severe exit code noted; ok and locked count the
	// agents that drained their user's queue and that found its lock held
	worst, ok, locked int
}

// note records an exit code of the fleet's: an agent's, or the fleet's own
// finding (no agent could start).
func (o *fleetOutcome) note(code int) {
	if severity(code) > severity(o.worst) {
		o.worst = code
	}
}

// agentExited records the exit code of an agent that ran.
func (o *fleetOutcome) agentExited(code int) {
	o.note(code)
	switch code {
	case ExitOK:
		o.ok++
	case ExitLocked:
		o.locked++
	}
}

// exitCode is the fleet's exit code: the most severe of its agents', 3
// only if no agent drained a queue (every user it tried was held by
// another host).
func (o *fleetOutcome) exitCode() int {
	if o.worst == ExitLocked && o.ok > 0 {
		return ExitOK
	}
	return o.worst
}

// summary is the error the fleet ends with, exit code code, having
// started agents.
func (o *fleetOutcome) summary(code, started int) error {
	if code == ExitLocked {
		return fmt.Errorf("every user with due work is being worked on by agents elsewhere: %w", state.ErrLocked)
	}
	return fmt.Errorf("%d of %d agents ended with an error (the most severe: exit %d); see their log lines", started-o.ok-o.locked, started, code)
}

// wait releases the spare locks, and those that the lock requests under
// way take, and waits for every running agent to end.
func (f *fleet) wait(ctx context.Context) {
	for f.taking != nil {
		f.lockAnswer(ctx, <-f.lockDone) // with ctx done or past the stop: no start
	}
	f.locks.releaseSpares(ctx)
	for len(f.agents.running) > 0 {
		f.reap(ctx, <-f.agents.ended)
	}
	if len(f.locks.unreleased) > 0 {
		f.readLocks(ctx)
	}
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

// newFleet makes a fleet, with its empty memory of its agents and users,
// that runs its agents in agents.
func newFleet(o *RunOptions, id string, lister state.Admin, locker fleetLocker, agents *fleetAgents) *fleet {
	return &fleet{o: o, log: agents.log, place: fleetPlace(holder.This()),
		start: time.Now(), agents: agents, locks: newFleetLocks(o, id, agents.log, locker, lister),
		drained: map[string]state.UserDue{}, notBefore: map[string]time.Time{}, done: map[string]bool{},
		backlog:  backlog{ranElsewhere: map[string]bool{}},
		disc:     &discoverer{lister: lister, timeout: o.Agent.PhaseTimeout, answers: make(chan discovery, 1)},
		lockDone: make(chan lockWork, 1)}
}
