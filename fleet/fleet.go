// Package fleet runs one agent process (`aso run --user U`) for every user
// with due work, from one command per host (`aso run --all-users`): it
// discovers the users in one query per round, takes each user's run lock
// for the agent it starts (handed over on the agent's command line: see
// Handover), starts at most Config.MaxAgents at once, oldest waiting work
// first, and exits with the most severe exit code of its agents. Fleets
// on several hosts share the users out through the run locks.
//
// A Fleet only sequences its parts, each a type owning its state and
// policy: the discoverer asks for the users with due work, the slots run
// the agent processes, the locks take and release the run locks, and the
// outcome keeps the agents' exit codes.
package fleet

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// Config is what a fleet runs by: the agents' command and the flags of
// `aso run` that the fleet itself reads.
type Config struct {
	// Exe is the aso executable the agents run; Args are the arguments
	// every agent starts with (`run` and the flags given to the fleet but
	// its own), before its per-user ones.
	Exe  string
	Args []string
	// PerUser are flags whose value holds UserTemplate: each agent is
	// given them, after Args so that they win, with its user's name in
	// place of the template.
	PerUser []Flag
	// Couch is handed to every agent on CouchDB (nil: another store).
	Couch *Couch

	MaxAgents        int           // agent processes at once
	DiscoverInterval time.Duration // how often to look for users while agents run
	LockTTL          time.Duration // the run locks' TTL (the agents' --lock-ttl)
	PhaseTimeout     time.Duration // the bound of each request to the store
	MaxRuntime       time.Duration // no agent starts after it; 0: no limit
	// Once and DryRun are the agents' --once and --dry-run: a user runs
	// once at most; a dry run takes no lock.
	Once, DryRun bool

	// Log receives the fleet's lines and its agents' (each with its user).
	Log *logrus.Logger
	// View shows the agents' progress (nil: none; the agents then get no
	// pipe for it).
	View View
}

// Flag is one flag of an agent's command line.
type Flag struct{ Name, Value string }

// UserTemplate is replaced by the user's name in Config.PerUser.
const UserTemplate = "{user}"

// View shows the progress of a fleet's agents. The fleet calls it from
// several goroutines.
type View interface {
	// Round gives the users with due work of a discovery round, with
	// their queues.
	Round(due []state.UserDue)
	// Started and Ended bracket the run of user's agent; Pass is one of
	// its passes, read from the pipe the agent writes them to (see
	// ProgressTo).
	Started(user string)
	Pass(user string, ps agent.PassStats)
	Ended(user string)
}

// Store is what a fleet asks of the state store.
type Store interface {
	DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error)
	Locks(ctx context.Context, user string) ([]state.LockDoc, error)
	AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (state.Lock, error)
	ReleaseLock(ctx context.Context, l state.Lock, run *state.RunRecord) error
}

// ExitError is the end of a fleet some of whose agents did not drain
// their user's queue: Code is the fleet's exit code, the most severe of
// its agents' (see exitcode.Severity).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Fleet runs the agents of every user with due work: see Run.
type Fleet struct {
	cfg   Config
	log   *logrus.Entry
	place uint64 // this fleet's, in the scores of users: see spread
	start time.Time
	slots *slots
	locks *locks

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
	// skipped keeps the users with due work whose name is not a user name.
	skipped *skipped
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

	outcome outcome
	// heldElsewhere counts the due users of the last round left alone
	// because an agent elsewhere holds their run lock.
	heldElsewhere int
}

// New makes a fleet that runs by cfg on store, with its empty memory of
// its agents and users.
func New(cfg Config, store Store) *Fleet {
	if cfg.Log == nil {
		cfg.Log = logrus.New()
		cfg.Log.SetOutput(io.Discard)
	}
	id := holder.NewID()
	log := cfg.Log.WithField("fleet", id)
	f := &Fleet{cfg: cfg, log: log, place: fleetPlace(holder.This()), start: time.Now(),
		drained: map[string]state.UserDue{}, notBefore: map[string]time.Time{}, done: map[string]bool{}, skipped: &skipped{why: map[string]string{}, log: log},
		backlog:  backlog{ranElsewhere: map[string]bool{}},
		disc:     &discoverer{lister: store, timeout: cfg.PhaseTimeout, answers: make(chan discovery, 1)},
		lockDone: make(chan lockWork, 1)}
	f.slots, f.locks = newSlots(&f.cfg, log), newLocks(&f.cfg, id, log, store)
	if cfg.MaxRuntime > 0 {
		f.slots.stop = f.start.Add(cfg.MaxRuntime)
	}
	return f
}

// Run finds the users with due work in one query per round and runs an
// agent for each, at most MaxAgents at once, oldest waiting first,
// looking again each time an agent ends, until nothing is due, MaxRuntime
// has passed or ctx is cancelled; a cancelled ctx is passed on to the
// agents as SIGTERM (Kill kills them). It releases the locks it holds and
// waits for its agents before it returns. It returns an error when the
// state store cannot be read, else an *ExitError when an agent did not
// drain its user's queue (and none that drained makes up for a lock held
// elsewhere).
func (f *Fleet) Run(ctx context.Context) error {
	defer context.AfterFunc(ctx, f.slots.terminate)()
	err := f.loop(ctx)
	f.wait(ctx)
	code := f.outcome.exitCode()
	f.log.WithFields(logrus.Fields{"agents": f.slots.started, "drained": f.outcome.ok, "locked_elsewhere": f.outcome.locked, "lost_lock_races": f.locks.lostRaces,
		"max_slot_wait_s": f.slots.maxSlotWait.Seconds(), "max_slot_wait_backlog_s": f.slots.maxBacklogWait.Seconds(),
		"exit_code": code, "runtime": time.Since(f.start).Round(time.Millisecond).String(), "skipped_users": f.skipped.String()}).Info("fleet finished")
	if err != nil {
		return err
	}
	if code != exitcode.OK {
		return &ExitError{Code: code, Err: f.outcome.summary(code, f.slots.started)}
	}
	return nil
}

// Kill kills every running agent with its process group (gfal-rm
// included), at once: for a second stop signal.
func (f *Fleet) Kill() { f.slots.kill() }

// loop starts agents until nothing is due, the stop time has passed or ctx
// is cancelled. A discovery round (see round) is asked for at the start,
// whenever no agent runs, and on a tick when one is due (see roundDue);
// its query runs beside the loop (see ask), so that while it runs a slot
// freed takes the next user of the last round's backlog at once (see
// refill). It returns an error only when the state store cannot be read
// and no agent is running to wait for.
func (f *Fleet) loop(ctx context.Context) error {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(f.cfg.DiscoverInterval)
	defer tick.Stop()
	failures := 0
	f.disc.ask(qctx)
	for {
		if ctx.Err() != nil || f.slots.pastStop() {
			return nil
		}
		var pending time.Time
		var err error
		if d := f.disc.take(); d != nil {
			var started int
			started, pending, err = f.round(ctx, *d)
			switch {
			case err != nil && len(f.slots.running) == 0:
				if failures++; failures >= 3 || ctx.Err() != nil {
					return err
				}
				f.log.WithError(err).Warn("cannot list the users with due work; trying again")
			case err != nil:
				f.log.WithError(err).Warn("cannot list the users with due work; trying again when an agent ends")
			default:
				failures = 0
			}
			if err == nil && len(f.slots.running) == 0 && started == 0 && pending.IsZero() && f.taking == nil {
				if f.slots.started == 0 && f.heldElsewhere > 0 {
					f.outcome.note(exitcode.Locked) // every user with due work has an agent elsewhere
				}
				return nil // nothing due that this host can do
			}
		} else if started, p := f.refill(ctx); len(f.slots.running) == 0 && started == 0 {
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
func (f *Fleet) roundDue() bool {
	if time.Since(f.backlog.at) >= staleBacklog*f.cfg.DiscoverInterval {
		return true
	}
	return f.slots.free() > 0 && !slices.ContainsFunc(f.backlog.due, f.startable)
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
func (f *Fleet) sleep(ctx context.Context, tick <-chan time.Time, d time.Duration) bool {
	var retry <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		retry = t.C
	}
	var stop <-chan time.Time
	if !f.slots.stop.IsZero() {
		t := time.NewTimer(time.Until(f.slots.stop))
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
	case c := <-f.slots.ended:
		f.reap(ctx, c)
		for {
			select {
			case c := <-f.slots.ended:
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

// reap records how the agent c ended and when its user may run again.
func (f *Fleet) reap(ctx context.Context, c *child) {
	f.slots.reaped(c)
	f.locks.agentEnded(c)
	code := c.code
	fields := logrus.Fields{agent.FieldUser: c.user.User, "exit_code": code, "runtime": c.runtime().Round(time.Millisecond).String()}
	why := c.reason()
	if code != exitcode.OK && why != "" {
		fields["reason"] = why
	}
	f.outcome.agentExited(code)
	if f.cfg.Once || f.cfg.DryRun {
		f.done[c.user.User] = true
	}
	switch code {
	case exitcode.OK:
		f.drained[c.user.User] = c.user
		delete(f.notBefore, c.user.User)
		if why != "" { // an agent that exits 0 has no final error line
			fields["last_error"] = why
		}
		f.log.WithFields(fields).Info("agent finished")
	case exitcode.Locked:
		f.notBefore[c.user.User] = time.Now().Add(lockedBackoff(&f.cfg))
		f.log.WithFields(fields).Info("another agent holds this user's run lock; moving on")
	case exitcode.TempFail:
		f.notBefore[c.user.User] = time.Now().Add(f.cfg.DiscoverInterval)
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
func lockedBackoff(cfg *Config) time.Duration {
	return min(max(cfg.LockTTL/3, time.Second), cfg.DiscoverInterval)
}

// wait releases the spare locks, and those that the lock requests under
// way take, and waits for every running agent to end.
func (f *Fleet) wait(ctx context.Context) {
	for f.taking != nil {
		f.lockAnswer(ctx, <-f.lockDone) // with ctx done or past the stop: no start
	}
	f.locks.releaseSpares(ctx)
	for len(f.slots.running) > 0 {
		f.reap(ctx, <-f.slots.ended)
	}
	if len(f.locks.unreleased) > 0 {
		f.readLocks(ctx)
	}
}
