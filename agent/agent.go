package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// Agent is one user's TransferAgent.
type Agent struct {
	cfg     Config
	store   Store
	pager   state.ActivePager // the store's, if it has the ability; else nil
	confirm state.Confirmer   // the store's, if it has the ability; else nil
	fts     FTS
	sites   Resolver
	deleter Deleter
	checker DestinationChecker // the deleter's, if it is one; else nil
	log     *logrus.Entry
	metrics *Metrics

	// recoverer and recorder are the store's, if it has the ability; else nil.
	recoverer state.Recoverer
	recorder  state.RunRecorder
	// linkClaimer and ender are the store's, if it has the ability; else nil.
	linkClaimer state.LinkClaimer
	ender       state.QueueEnder
	links       linkCounts

	// book holds the claimed transfers and the pending jobs, and makes
	// every write that carries their revisions.
	book *ledger
	// deletes and checks count, per transfer, the failed and the skipped
	// deletions of its destination copy and checks of the file there.
	deletes, checks holds
	// stale are the source-missing transfers whose destination was found
	// not to be their own file: deleted without another check.
	stale map[string]bool
	// solo are the transfers sent one per job (see destinationTaken).
	solo map[string]bool
	// takes are the FTS endpoints that accepted a job of this run, and
	// unproven counts, by endpoint, the jobs it refused as malformed
	// before it accepted any (see refused).
	takes    map[string]bool
	unproven map[string]int

	keeper *keeper
	start  time.Time
	// claimedAt is when the last pass asked for new transfers: one whose
	// cool-off ended since then was not eligible for that claim.
	claimedAt time.Time
	// unconfirmed counts the drain checks in a row that could not read the
	// agent's own transfers (Confirmer).
	unconfirmed int
	// fatal is set when the run must end with an error although ownership
	// is intact (FTS refused our credentials).
	fatal atomic.Pointer[error]

	// OpenFTS, if set, opens a client of another FTS endpoint, with the
	// run's credentials, for the jobs submitted there (see ftsAt).
	OpenFTS func(ctx context.Context, endpoint string) (FTS, error)
	// others are the clients opened by OpenFTS, by endpoint.
	others   map[string]FTS
	othersMu sync.Mutex

	// OnPass, if set, is called after every pass with its statistics.
	OnPass func(PassStats)
	// Report, if set, receives the dry-run plan.
	Report func(Plan)
}

// New builds an agent. log may be nil (logs are discarded).
func New(cfg Config, store Store, f FTS, sites Resolver, d Deleter, log *logrus.Logger) (*Agent, error) {
	if c, ok := state.As[state.Configured](store); ok {
		var err error
		if cfg, err = cfg.fromStore(c.Config()); err != nil {
			return nil, err
		}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.New()
		log.SetOutput(discard{})
	}
	m := NewMetricsFor(cfg.User)
	a := &Agent{
		cfg: cfg, sites: sites,
		log:      log.WithField(FieldUser, cfg.User),
		metrics:  m,
		deletes:  newHolds(),
		checks:   newHolds(),
		stale:    map[string]bool{},
		solo:     map[string]bool{},
		takes:    map[string]bool{},
		unproven: map[string]int{},
		others:   map[string]FTS{},
	}
	a.checker, _ = d.(DestinationChecker)
	a.wrap(store, f, d)
	return a, nil
}

// Metrics returns the agent's metrics (for --metrics-file).
func (a *Agent) Metrics() *Metrics { return a.metrics }

// fail ends the run after the current pass with err.
func (a *Agent) fail(err error) { a.fatal.CompareAndSwap(nil, &err) }

// failed returns the error the run must end with, or nil.
func (a *Agent) failed() error {
	if p := a.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// checkFTS asks FTS who we are before any claim, so that unusable
// credentials stop the run before anything is touched.
func (a *Agent) checkFTS(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	defer cancel()
	if _, err := a.fts.VO(ctx); err != nil {
		return fmt.Errorf("FTS whoami: %w", err)
	}
	return nil
}

// Run takes the user's run lock and loops until the queue has drained, ctx is
// cancelled (SIGTERM: the writes in flight are finished, claimed but
// unsubmitted transfers are released without penalty, the lock is released,
// and Run returns nil), MaxRuntime passes, or the lock or a lease is lost
// (Run stops at once and returns an error wrapping state.ErrLockLost or
// state.ErrLeaseLost). It returns an error wrapping state.ErrLocked,
// without touching anything, if another agent holds the lock.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.DryRun {
		return a.dryRun(ctx)
	}
	start := a.cfg.Now()
	a.start = start
	lctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	lock, err := a.store.AcquireLock(lctx, a.cfg.User, a.cfg.Owner, a.cfg.LockTTL)
	cancel()
	if err != nil {
		return fmt.Errorf("take the run lock of %s: %w", a.cfg.User, err)
	}
	a.log.WithField("owner", a.cfg.Owner).Info("run lock taken")
	if err := a.checkFTS(ctx); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.PhaseTimeout)
		if rerr := a.releaseLock(rctx, lock, err); rerr != nil {
			a.log.WithError(rerr).Warn("releasing the run lock failed; it expires by itself")
		}
		cancel()
		if ctx.Err() != nil {
			// SIGTERM during the check: a graceful stop, nothing was touched
			a.log.Info("stopping on request before the first pass")
			return nil
		}
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
	a.keeper = newKeeper(a, lock, func(err error) {
		a.log.WithError(err).Error("lost ownership; stopping all work at once")
		abort(fmt.Errorf("%w: %w", ErrStopped, err))
	})
	kctx, kstop := context.WithCancel(work)
	var kwg sync.WaitGroup
	kwg.Add(1)
	go func() { defer kwg.Done(); a.keeper.run(kctx) }()
	a.takeBack(work, lock)

	runErr := a.loop(stop, work)
	kstop()
	kwg.Wait()
	if cause := context.Cause(work); cause != nil {
		return cause
	}
	a.shutdown(work, runErr)
	a.log.WithField("runtime", a.cfg.Now().Sub(start).Round(time.Millisecond).String()).Info("agent finished")
	return runErr
}

// ErrNoProgress ends a run whose every pass for Config.GiveUpAfter had
// errors and made no progress: the error is reported (exit 75) rather than
// retried unseen behind the run lock, which keeps the next runs out.
var ErrNoProgress = errors.New("no progress")

func (a *Agent) loop(stop, work context.Context) error {
	var failing time.Time // since when every pass had errors and no progress
	for n := 1; ; n++ {
		if !a.keeper.tick(work) {
			return nil
		}
		start := a.cfg.Now()
		ps := a.pass(stop, work, n)
		if a.OnPass != nil {
			a.OnPass(ps)
		}
		if err := a.failed(); err != nil {
			return err
		}
		if ps.Errors == 0 || ps.progressed() {
			failing = time.Time{}
		} else if failing.IsZero() {
			failing = start
		}
		if give := a.cfg.GiveUpAfter; give > 0 && !failing.IsZero() && a.cfg.Now().Sub(failing) >= give {
			return fmt.Errorf("%w: every pass for %s had errors (the log gives them) and did nothing: no transfer claimed, submitted, recorded or deleted, none heard of as running; giving up (--give-up-after)",
				ErrNoProgress, a.cfg.Now().Sub(failing).Round(time.Second))
		}
		if work.Err() != nil {
			return nil
		}
		if stop.Err() != nil {
			a.log.WithField("pass", n).Info("stopping on request")
			return nil
		}
		if a.cfg.Once {
			return nil
		}
		if ps.drained() && !a.waitingSoon(work) {
			a.log.WithField("pass", n).Info("queue drained")
			return nil
		}
		if !ps.more {
			// a full batch means more is waiting: claim it at once
			a.cfg.Sleep(a.cfg.Interval, stop.Done())
		}
	}
}

// viewLagGrace bounds how long the agent waits for a lagging view to show a
// transfer of its own that is due (see waitingSoon).
const viewLagGrace = 2 * time.Minute

// maxUnconfirmed bounds the drain checks in a row that find the queue
// empty but cannot read the agent's own transfers, after which it exits.
const maxUnconfirmed = 3

// waitingSoon reports whether some transfer of the user will become
// claimable before the run must end (a cool-off or an expired lease passing
// before the --max-runtime deadline; any time without one), or became
// claimable after the last pass's claim, so the agent should wait for it
// instead of exiting. Transfers blocked only by
// dependencies are not counted: they become claimable through other
// transfers' progress, which keeps passes busy anyway. With a
// state.Confirmer, transfers this agent claimed that are still submitted
// count too.
func (a *Agent) waitingSoon(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	defer cancel()
	ts, err := a.store.List(ctx, state.Filter{User: a.cfg.User, States: []state.State{state.StateNew, state.StateAcquired}})
	if err != nil {
		a.log.WithError(err).Warn("cannot list waiting transfers; exiting anyway")
		return false
	}
	if a.confirm != nil {
		// the lists may lag behind this agent's own writes (a CouchDB
		// cluster's views): its own transfers are read by ID
		own, err := a.confirm.Unsettled(ctx)
		if err != nil {
			// the views alone may not show them: look again next pass, a
			// few times, before exiting on what the views show
			a.unconfirmed++
			if a.unconfirmed <= maxUnconfirmed {
				a.log.WithError(err).Warn("cannot confirm the claimed transfers by reading them; not exiting yet")
				return true
			}
			a.log.WithError(err).Error("cannot confirm the claimed transfers by reading them; exiting on what the views show")
		} else {
			a.unconfirmed = 0
		}
		now := a.cfg.Now()
		for i := range own {
			t := &own[i]
			if t.State == state.StateSubmitted {
				return true
			}
			// one of ours back in the queue and due, but not claimed: the
			// claim's view had not seen it yet; wait for the view, a while
			// after it became due: at the end of its cool-off, or when it
			// was written back without one (a lost job, a release)
			due := t.RetryAfter.Time
			if t.LastUpdate.After(due) {
				due = t.LastUpdate.Time
			}
			if t.State == state.StateNew && !due.After(now) && now.Sub(due) < viewLagGrace {
				return true
			}
		}
		ts = append(ts, own...)
	}
	horizon := time.Unix(1<<62, 0)
	if a.cfg.MaxRuntime > 0 {
		horizon = a.start.Add(a.cfg.MaxRuntime)
	}
	for i := range ts {
		t := &ts[i]
		if t.State == state.StateAcquired && !t.LeaseExpires.After(horizon) {
			return true
		}
		if t.State == state.StateNew && t.RetryAfter.After(a.claimedAt) && !t.RetryAfter.After(horizon) {
			return true
		}
	}
	return false
}

// shutdown releases what was claimed but not submitted (without penalty;
// transfers whose submission may have reached FTS keep their sid and lease,
// so the next agent adopts them) and the run lock.
func (a *Agent) shutdown(work context.Context, runErr error) {
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	a.retryPending(ctx)
	if ids := a.book.unsubmitted(); len(ids) > 0 {
		res, err := a.book.release(ctx, ids, "agent stopped before submission")
		a.logResults("shutdown", "release", res, err)
	}
	if err := a.releaseLock(ctx, a.keeper.current(), runErr); err != nil {
		a.log.WithError(err).Warn("releasing the run lock failed; it expires by itself")
	} else {
		a.log.Info("run lock released")
	}
}

func (a *Agent) logResults(phase, what string, res []state.Result, err error) {
	l := a.log.WithField(FieldPhase, phase)
	if err != nil {
		l.WithError(err).Errorf("%s failed", what)
		return
	}
	for _, r := range res {
		if r.Err != nil {
			l.WithField(FieldTransfer, r.ID).WithError(r.Err).Warnf("%s: item not written", what)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
