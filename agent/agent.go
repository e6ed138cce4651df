package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// Log field names.
const (
	FieldTransfer = "transfer_id"
	FieldJob      = "fts_job"
	FieldPhase    = "phase"
	FieldUser     = "user"
)

// ErrStopped is the cause of the work context when the agent must stop at
// once (run lock or leases lost).
var ErrStopped = errors.New("agent stopped")

// ErrNoProgress ends a run whose every pass for Config.GiveUpAfter had
// errors and made no progress: the error is reported (exit 75) rather than
// retried unseen behind the run lock, which keeps the next runs out.
var ErrNoProgress = errors.New("no progress")

// Agent is one user's TransferAgent: the loop, which holds the run lock
// (keeper) and sequences the stages of each pass: claim, submit, then
// monitor and record one group of jobs at a time. The stages share the
// ledger (what the agent holds) and the clients; none of them calls
// another.
type Agent struct {
	cfg     Config
	log     *logrus.Entry
	metrics *Metrics
	store   Store // with the metrics' timing and the write fence around it
	keeper  *keeper
	book    *ledger
	claims  *claimer
	submits *submitter
	monitor *monitor
	records *recorder
	drain   *drainCheck
	start   time.Time
}

// New builds an agent for the store, FTS client, sites and deleter given.
// log may be nil (logs are discarded).
func New(cfg Config, store Store, f FTS, sites Resolver, d Deleter, log *logrus.Logger) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.New()
		log.SetOutput(discard{})
	}
	a := &Agent{cfg: cfg, log: log.WithField(FieldUser, cfg.User), metrics: NewMetricsFor(cfg.User)}
	a.keeper = newKeeper(cfg, a.log)
	a.store = state.Wrap(state.Wrap(store, a.metrics.storeHooks()), a.keeper.hooks())
	a.keeper.store = a.store
	a.book = newLedger(a.store)
	a.keeper.book = a.book
	eps := newEndpoints(cfg, f, a.metrics, a.keeper, a.log)
	plan := newPlanner(cfg, sites)
	a.claims = newClaimer(cfg, a.store, a.book, a.log)
	a.submits = newSubmitter(cfg, a.book, plan, eps, a.log)
	a.monitor = newMonitor(cfg, a.store, a.book, eps, a.metrics, a.log)
	a.records = newRecorder(cfg, a.store, a.book, d, a.keeper, a.metrics, a.log)
	a.drain = newDrainCheck(cfg, a.store, a.book, a.log)
	return a, nil
}

// Metrics returns the agent's metrics (for --metrics-file).
func (a *Agent) Metrics() *Metrics { return a.metrics }

// Run takes the user's run lock and loops until the queue has drained, ctx is
// cancelled (SIGTERM: the writes in flight are finished, claimed but
// unsubmitted transfers are released without penalty, the lock is released,
// and Run returns nil), MaxRuntime passes, or the lock or a lease is lost
// (Run stops at once and returns an error wrapping state.ErrLockLost or
// state.ErrLeaseLost). It returns an error wrapping state.ErrLocked,
// without touching anything, if another agent holds the lock.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.DryRun {
		return dryRun(ctx, a.cfg, a.store, a.submits.plan)
	}
	a.start = a.cfg.Now()
	lock, err := a.begin(ctx)
	if err != nil || lock == nil {
		return err
	}
	// stop: graceful (SIGTERM, max runtime). work: hard; I/O runs under it,
	// so writes in flight finish on SIGTERM but not after losing the lock.
	stop := ctx
	if a.cfg.MaxRuntime > 0 {
		var c context.CancelFunc
		stop, c = context.WithTimeout(ctx, a.cfg.MaxRuntime)
		defer c()
	}
	work, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abort(nil)
	a.keeper.hold(*lock, func(err error) {
		a.log.WithError(err).Error("lost ownership; stopping all work at once")
		abort(fmt.Errorf("%w: %w", ErrStopped, err))
	})
	kctx, kstop := context.WithCancel(work)
	var kwg sync.WaitGroup
	kwg.Go(func() { a.keeper.run(kctx) })
	a.takeBack(work, *lock)

	last, runErr := a.loop(stop, work)
	kstop()
	kwg.Wait()
	if cause := context.Cause(work); cause != nil {
		return cause
	}
	runErr = a.shutdown(work, last, runErr)
	a.log.WithField("runtime", a.cfg.Now().Sub(a.start).Round(time.Millisecond).String()).Info("agent finished")
	return runErr
}

// begin takes the run lock and asks FTS who we are, so that unusable
// credentials stop the run before anything is touched. A nil lock with a
// nil error is a graceful stop during the check (SIGTERM): nothing was
// touched.
func (a *Agent) begin(ctx context.Context) (*state.Lock, error) {
	lctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	lock, err := a.keeper.acquire(lctx)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		// SIGTERM while the store had not answered: nothing was taken
		a.log.WithError(err).Info("stopping on request before the run lock was taken")
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("take the run lock of %s: %w", a.cfg.User, err)
	}
	a.log.WithField("owner", a.cfg.Owner).Info("run lock taken")
	err = a.submits.checkFTS(ctx)
	if err == nil {
		return &lock, nil
	}
	stopped := ctx.Err() != nil
	if stopped {
		// SIGTERM during the check: a graceful stop, nothing was touched
		a.log.Info("stopping on request before the first pass")
		err = nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.PhaseTimeout)
	defer cancel()
	if rerr := a.keeper.release(rctx, lock, err, a.start); rerr != nil {
		a.log.WithError(rerr).Warn("releasing the run lock failed; it expires by itself")
	}
	return nil, err
}

// loop runs passes until the run ends, and returns the last pass.
func (a *Agent) loop(stop, work context.Context) (PassStats, error) {
	var failing time.Time // since when every pass had errors and no progress
	var ps PassStats
	poll := NewPoller(a.cfg.FirstPoll, a.cfg.Interval, a.start)
	for n := 1; ; n++ {
		if !a.keeper.tick(work) {
			return ps, nil
		}
		start := a.cfg.Now()
		ps = a.pass(stop, work, n)
		if a.cfg.OnPass != nil {
			a.cfg.OnPass(ps)
		}
		if err := a.submits.failed(); err != nil {
			return ps, err
		}
		if ps.Errors == 0 || ps.progressed() {
			failing = time.Time{}
		} else if failing.IsZero() {
			failing = start
		}
		if give := a.cfg.GiveUpAfter; give > 0 && !failing.IsZero() && a.cfg.Now().Sub(failing) >= give {
			return ps, fmt.Errorf("%w: every pass for %s had errors (the log gives them) and did nothing: no transfer claimed, submitted, recorded or deleted, none heard of as running; giving up (--give-up-after)",
				ErrNoProgress, a.cfg.Now().Sub(failing).Round(time.Second))
		}
		switch {
		case work.Err() != nil:
			return ps, nil
		case stop.Err() != nil:
			a.log.WithField("pass", n).Info("stopping on request")
			return ps, nil
		case a.cfg.Once:
			return ps, nil
		case ps.drained() && !a.drain.waitingSoon(work, a.start, a.claims.lastClaim()):
			a.log.WithField("pass", n).Info("queue drained")
			return ps, nil
		case !ps.more:
			// a full batch means more is waiting: claim it at once
			wait := poll.Next(ps.changed(), a.cfg.Now())
			a.log.WithField("pass", n).WithField("wait", wait.String()).Debug("waiting for the next pass")
			a.cfg.Sleep(wait, stop.Done())
		}
	}
}

// pass runs the stages once: claims and submissions, then monitoring and
// recording, one group of jobs at a time.
func (a *Agent) pass(stop, work context.Context, n int) PassStats {
	t := newTally(n, a.metrics, a.log)
	t0 := a.cfg.Now()
	a.submitPhase(stop, work, t)
	t.ps.Submit = a.cfg.Now().Sub(t0)
	a.monitorPhase(work, t)
	return t.done()
}

// submitPhase claims in rounds of BatchSize. While claims come back full
// (more is waiting) it submits only full jobs of MaxFilesPerJob files and
// keeps the rest held for the next round, so jobs are not cut short by the
// batch size; it stops claiming once jobsPerPass jobs' worth of transfers
// were claimed this pass (so the monitor phase keeps its turn), and submits
// everything held once the queue has no more to give. The next round's
// claim runs while a full batch is submitted: the store reads and writes
// the next batch while FTS answers (FTS takes up to seconds per job), and
// the agent holds the claimed batch only when the submission is over, so
// that claims and submissions never touch the same transfers.
func (a *Agent) submitPhase(stop, work context.Context, t *tally) {
	limit := max(a.cfg.BatchSize, jobsPerPass*a.cfg.MaxFilesPerJob)
	running := func() bool { return stop.Err() == nil && work.Err() == nil && a.submits.failed() == nil }
	var next <-chan claimResult
	if running() {
		next = a.claims.start(work)
	}
	for next != nil {
		full := a.claims.take(<-next, t)
		next = nil
		t.ps.more = full
		if !full {
			break
		}
		if t.ps.Claimed < limit && running() {
			next = a.claims.start(work)
		}
		a.submits.submitHeld(stop, work, t, false)
	}
	a.submits.submitHeld(stop, work, t, !t.ps.more)
	t.ps.Pending = a.submits.pendingJobs()
}

// monitorPhase checks the user's active jobs in FTS and records their
// outcomes, one group of jobs at a time, so that the agent holds the
// transfers of one group at a time. A group whose listing or status fails
// is skipped this pass (an error of the pass); the others go on.
func (a *Agent) monitorPhase(work context.Context, t *tally) {
	defer a.book.countLinks(t)()
	start := a.cfg.Now()
	groups, ok := a.monitor.groups(work, t)
	t.ps.Monitor += a.cfg.Now().Sub(start)
	if !ok {
		return
	}
	for _, g := range groups {
		if work.Err() != nil {
			return // ownership lost: nothing more may be written
		}
		start := a.cfg.Now()
		outs := a.monitor.check(work, g, t)
		mid := a.cfg.Now()
		t.ps.Monitor += mid.Sub(start)
		a.records.record(work, outs, t)
		t.ps.Record += a.cfg.Now().Sub(mid)
	}
}

// takeBack runs once the run lock is held: no other agent of the user is
// alive, so the claims of any other owner belong to an agent that died
// (SIGKILL, a crashed host). They are made claimable at once, in one bulk
// write, instead of waiting out their leases; the first pass claims them,
// and those with a submit_sid go through the lookup of their job in FTS by
// its deterministic ID like any claim that carries one.
func (a *Agent) takeBack(work context.Context, lock state.Lock) {
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout) // fenced by the store's decorator
	defer cancel()
	back, err := a.store.TakeBack(ctx, lock)
	if err != nil {
		a.log.WithError(err).Warn("taking back the claims of dead agents failed; they are claimed once their leases expire")
		return
	}
	if len(back) == 0 {
		return
	}
	for _, t := range back {
		if n := len(t.History); n > 0 {
			a.log.WithField(FieldTransfer, t.ID).WithField("sid", t.SubmitSID).Info(t.History[n-1].Reason)
		}
	}
	a.metrics.count("taken_back", len(back))
	a.log.WithField("transfers", len(back)).Warn("took back the claims of agents that are no longer running; they are claimed at once")
}

// shutdown releases what was claimed but not submitted (without penalty;
// transfers whose submission may have reached FTS keep their sid and lease,
// so the next agent adopts them) and the run lock, recording the run; what
// it settled is counted as part of the last pass, last. A lock found taken
// by another agent meanwhile (this one was frozen past its expiry) ends the
// run with an error wrapping state.ErrLockLost.
func (a *Agent) shutdown(work context.Context, last PassStats, runErr error) error {
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	t := newTally(0, a.metrics, a.log)
	a.submits.settlePending(ctx, t)
	if ids := a.book.unsubmitted(); len(ids) > 0 {
		res, err := a.book.release(ctx, ids, "agent stopped before submission")
		t.released("shutdown", res, err)
	}
	final := t.done()
	final.Pass, final.Active, final.Unrecorded, final.Pending = last.Pass, last.Active, last.Unrecorded, a.submits.pendingJobs()
	if a.cfg.OnPass != nil && final.changed() {
		a.cfg.OnPass(final)
	}
	err := a.keeper.release(ctx, a.keeper.current(), runErr, a.start)
	switch {
	case errors.Is(err, state.ErrLockLost):
		a.log.WithError(err).Error("the run lock was taken by another agent while this one could not renew it; its run record is that agent's")
		return errors.Join(runErr, fmt.Errorf("release the run lock: %w", err))
	case err != nil:
		a.log.WithError(err).Warn("releasing the run lock failed; it expires by itself")
	default:
		a.log.Info("run lock released")
	}
	return runErr
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
