package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fleet"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/internal/outputs"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// RunOptions are the flags of `aso run`.
type RunOptions struct {
	FTS         FTSOptions
	Sites       string
	Agent       agent.Config
	LeaseTTL    time.Duration
	CoolOff     time.Duration
	MaxAttempts int
	MetricsFile string
	GfalRm      string
	Fleet       FleetOptions
	Beyond      BeyondOptions

	// DependencyWait bounds the wait for an unknown dependency.
	DependencyWait time.Duration
}

// AddFlags registers the flags of `aso run`.
func (o *RunOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	o.FTS.AddFlags(cmd)
	f.StringVar(&o.Sites, "sites", "", "sites file mapping site names to storage rules (YAML or JSON)")
	a := &o.Agent
	f.IntVar(&a.BatchSize, "batch-size", agent.DefaultBatchSize, "transfers claimed per state-store call")
	f.IntVar(&a.MaxFilesPerJob, "max-files-per-job", agent.DefaultMaxFilesPerJob, "files per FTS job")
	f.IntVar(&a.MonitorGroup, "monitor-group", 0, "active transfers checked and recorded at a time, in whole jobs; bounds the agent's memory")
	f.DurationVar(&a.Interval, "interval", agent.DefaultInterval, "longest wait between passes (none after a full batch)")
	f.DurationVar(&a.FirstPoll, "first-poll", agent.DefaultFirstPoll, "wait after a pass that claimed, submitted or ended transfers, doubled after each pass that did not, up to --interval (equal to --interval: a fixed wait)")
	f.DurationVar(&a.UpdateWindow, "update-window", agent.DefaultUpdateWindow, "every active transfer is touched at least this often")
	f.DurationVar(&a.LockTTL, "lock-ttl", agent.DefaultLockTTL, "TTL of the per-user run lock (renewed every third)")
	f.DurationVar(&a.PhaseTimeout, "phase-timeout", agent.DefaultPhaseTimeout, "bound of each state-store and FTS call")
	f.DurationVar(&a.DeleteTimeout, "delete-timeout", agent.DefaultDeleteTimeout, "bound of one gfal-rm batch")
	f.BoolVar(&a.Once, "once", false, "run a single pass")
	f.DurationVar(&a.MaxRuntime, "max-runtime", 0, "stop gracefully after this long (keep it under the cron period)")
	f.DurationVar(&a.GiveUpAfter, "give-up-after", agent.DefaultGiveUpAfter, "exit 75 once every pass for this long had errors and none made progress")
	f.BoolVar(&a.DryRun, "dry-run", false, "claim nothing; print what would be submitted")
	f.BoolVar(&a.VerifyChecksum, "verify-checksum", true, "ask FTS to verify ADLER32 checksums")
	f.BoolVar(&a.Overwrite, "overwrite", false, "let FTS overwrite existing destination files")
	f.IntVar(&a.FTSRetry, "fts-retry", 2, "FTS-side retries of recoverable errors")
	f.IntVar(&a.FTSRetryDelay, "fts-retry-delay", 0, "seconds between FTS-side retries")
	f.StringVar(&a.MaxTimeInQueue, "max-time-in-queue", agent.DefaultMaxTimeInQueue, "FTS cancels jobs queued longer than this (e.g. 12h, 90m)")
	f.StringVar(&a.Activity, "activity", "ASO", "FTS activity of the transfers")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", state.DefaultLeaseTTL, "lease of claimed transfers (renewed every third)")
	f.DurationVar(&o.CoolOff, "cool-off", state.DefaultCoolOff, "wait before a failed transfer is retried")
	f.IntVar(&o.MaxAttempts, "max-attempts", state.DefaultMaxAttempts, "attempts before a retryable failure is final")
	f.DurationVar(&o.DependencyWait, "dependency-wait", state.DefaultDependencyWait, "a transfer whose dependency is still unknown this long after its creation fails")
	f.StringVar(&o.MetricsFile, "metrics-file", "", "write Prometheus metrics here after every pass (node_exporter textfile format); refused before the run as --report is")
	f.StringVar(&o.GfalRm, "gfal-rm", "gfal-rm", "gfal-rm command used to delete destination copies of failed transfers")
	o.Fleet.AddFlags(cmd)
	o.Beyond.AddFlags(cmd)
}

func newRunCommand(g *Globals) *cobra.Command {
	o := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent for one user until the queue has drained",
		Long: `Run the transfer agent for one user: claim the user's transfers, submit them to FTS3
in bulk, monitor the jobs, delete the destination copy of failed transfers, record every
outcome, and exit when nothing is left to do.

A destination copy is deleted only when the records prove the transfer wrote it: it recorded
its ownership of the destination before its first submission, an attempt of it began writing
there (FTS's start_time with a transfer- or destination-side failure other than "file
exists"), and no other transfer owns the destination now. Anything else is left in place, the
reason saying "left in place: ..." and why. A transfer whose destination another active
transfer owns is not submitted beside it: it waits, its reason naming the owner; one whose
destination a done transfer holds with the same adler32 is recorded done, "already there".

Before it takes the run lock it reads the user's work once: a user who never had a
transfer ("no transfers for user U"), or one with nothing due (before --max-runtime ends), claimed or submitted whose run
lock is free, ends there with exit 0, having written nothing; the next start looks again.

Without --fts and --state it runs offline: file state and an in-process FTS3 simulator
that copies file:// URLs for real.

SIGTERM, SIGINT or SIGHUP: the writes in flight are finished, transfers claimed but not submitted
are released, the run lock is released, and aso exits 0. A second signal exits at once. A stop,
SIGKILL included, charges no transfer an attempt: a real FTS runs the submitted jobs on and the
next run follows them; the in-process simulator's jobs end with the run, and the next run sends
their transfers again. A job FTS no longer knows (404) counts an attempt unless its destination
holds the transfer's own file (size and adler32), which makes it done.

With --all-users it runs one agent process (aso run --user U) for every user with due work, at
most --max-agents at once, oldest waiting first, until nothing is due; {user} in --proxy,
--token-file, --metrics-file, --storage-token-file and --report becomes each user's name.
Several hosts may run it on the same state store: the run locks share the users out. It exits
with the most severe code of its agents.

A fleet hands each agent, after its other flags, flags that only a fleet sets (neither the
environment nor the configuration file): --fleet-agent (one user's agent; no queue summary
at the end), --fleet-owner ID (the owner ID under which the fleet took
the user's run lock, which the agent runs under), on CouchDB --fleet-read-quorum N and
--fleet-couch-identity JSON (what the fleet's check of the database and credentials found;
the agent does not ask again), and --progress-fd N (each pass as a JSON line to descriptor N).`,
		Args: cobra.NoArgs,
		// the root's, and a run refused by it still leaves its report and
		// (an agent's run) its metrics file
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			err := loadGlobals(g, cmd)
			if err != nil {
				refusedRun(cmd.Context(), o, g, err)
			}
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runRun(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

// refusedRun writes the report and the metrics file of a run whose
// settings were refused (err), naming the user when one was given. A
// fleet writes none: its agents write their own.
func refusedRun(ctx context.Context, o *RunOptions, g *Globals, err error) {
	if o.Fleet.fleet() {
		return
	}
	user, _ := g.UserName()
	end, _ := newRunEnd(o, g, user)
	end.finish(ctx, err)
}

// newRunEnd returns the writer of the run's report and metrics file,
// once their paths are checked (checkOutputs): a refused one is not
// written, and the error says why.
func newRunEnd(o *RunOptions, g *Globals, user string) (*runEnd, error) {
	end := &runEnd{g: g, rep: newRunReport()}
	end.rep.User = user
	err := g.checkOutputs([]outputs.Output{{Flag: "--report", Path: o.Beyond.Report, Replace: true}, {Flag: "--metrics-file", Path: o.MetricsFile, Replace: true}},
		outputs.Input{What: "the sites file", Path: o.Sites}, outputs.Input{What: "the token file", Path: o.FTS.tokenFile(g)},
		outputs.Input{What: "the proxy", Path: o.FTS.proxyPath(g)}, outputs.Input{What: "the storage token file", Path: o.Beyond.TokenFile})
	if err == nil {
		end.report, end.metrics = o.Beyond.Report, newMetricsFile(o.MetricsFile, g, user)
	}
	return end, err
}

func runRun(ctx context.Context, o *RunOptions, g *Globals) (err error) {
	if err := o.FTS.checkChosen(g); err != nil {
		if !o.Fleet.fleet() {
			refusedRun(ctx, o, g, err)
		}
		return err
	}
	if o.Fleet.fleet() {
		return runFleet(ctx, o, g)
	}
	user, uerr := g.UserName()
	end, oerr := newRunEnd(o, g, user)
	defer func() { end.finish(ctx, err) }()
	if uerr != nil {
		return uerr
	}
	if oerr != nil {
		return oerr
	}
	sites, err := loadRunSites(o, g)
	if err != nil {
		return err
	}
	defer onStopSignals(ctx, nil, func() { end.secondSignal(ctx) })()

	owner, err := runOwner(&o.Fleet)
	if err != nil {
		return err
	}
	if g.couchChecked, err = fleetChecked(&o.Fleet); err != nil {
		return err
	}
	policy := state.Policy{LeaseTTL: o.LeaseTTL, CoolOff: o.CoolOff, MaxAttempts: o.MaxAttempts, DependencyWait: o.DependencyWait}
	sc := state.Config{Agent: state.Agent{User: user, Owner: owner}, Policy: policy.WithDefaults()}
	dctx, stopDamaged := stopOnDamage(ctx) // the run's, stopped by damage found while it runs
	defer stopDamaged()
	store, err := g.OpenStore(dctx, sc)
	if err != nil {
		return stoppedEarly(ctx, g, err)
	}
	defer store.Close()
	defer func() { end.finish(ctx, err) }() // before the store closes: the queue is read into both
	end.mu.Lock()
	end.store, end.rep.Agent = store, owner
	if end.metrics != nil {
		end.metrics.store = store
	}
	end.mu.Unlock()
	if skipIdle(ctx, g, o, store, user) {
		return nil
	}
	return runAgent(dctx, o, g, store, sc, sites, end)
}

// runAgent runs the agent of a run whose store is open.
func runAgent(ctx context.Context, o *RunOptions, g *Globals, store state.Store, sc state.Config, sites *srm.Sites, end *runEnd) error {
	client, closeFTS, err := o.FTS.Open(ctx, g)
	if err != nil {
		return stoppedEarly(ctx, g, permanent(err))
	}
	defer closeFTS()

	cfg := o.Agent // the user, owner and policy the store was opened with
	cfg.User, cfg.Owner, cfg.Policy = sc.Agent.User, sc.Agent.Owner, sc.Policy
	cfg.FTSEndpoint = o.FTS.endpointName()
	cfg.ExitCode = func(err error) int { return ExitCode(tokenError(err)) } // as the process will exit
	cfg.HolderGone = holder.Judge
	cfg.OpenFTS = o.FTS.openOther(g)
	view := newProgressView(g, g.openConsole(g.Progress, 0), sc.Agent.User)
	defer view.con.close()
	view.queue = &queueCounter{g: g, store: store, user: sc.Agent.User}
	toFleet := fleet.ProgressTo(o.Fleet.Handover.ProgressFD)
	rep, metrics := end.rep, end.metrics
	cfg.OnPass = func(ps agent.PassStats) {
		view.pass(ctx, ps)
		toFleet(ps)
		rep.pass(ps)
		metrics.pass(ctx)
	}
	cfg.OnPlan = func(p agent.Plan) { printPlan(g, p) }
	del := &srm.Deleter{Command: o.GfalRm, Timeout: cfg.DeleteTimeout, Proxy: o.FTS.proxyPath(g), TokenFile: o.FTS.tokenFile(g), CertDir: o.FTS.gfalCertDir(g, sites)}
	ag, err := agent.New(cfg, store, countingFTS{client, rep}, sites, del, g.Log)
	if err != nil {
		return err
	}
	if metrics != nil {
		metrics.agent = ag.Metrics()
	}
	rep.phase("setup")
	err = ag.Run(ctx)
	rep.phase("run")
	view.finish()
	if derr := damaged(ctx); derr != nil {
		return derr
	}
	if err != nil {
		return lockedError(tokenError(err), sc.Agent.User, o.Agent.LockTTL)
	}
	if !o.Fleet.Handover.Agent {
		printQueue(ctx, g, store, sc.Agent.User)
	}
	return nil
}

// lockedError explains a run refused because the lock of user is held
// (err wraps a *state.LockedError) by holder.Refusal, keeping err's exit
// code (3).
func lockedError(err error, user string, ttl time.Duration) error {
	var le *state.LockedError
	if !errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("%s: %w", holder.Refusal(le.Holder, le.Expire, user, time.Now(), ttl), state.ErrLocked)
}

// stoppedEarly is the result of a run whose setup failed with err: nothing
// when a stop signal cancelled the setup (err is the cancellation; the run
// had claimed nothing), err otherwise. A delegation cut short by SIGTERM is
// not a credential to fix (exit 78), nor a stopped run a failure (exit 1).
func stoppedEarly(ctx context.Context, g *Globals, err error) error {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	g.Log.WithError(err).Warn("stopped by a signal before the agent started")
	return nil
}

// loadRunSites checks the options of a run that need no store, and the
// machine (unless it is a dry run: that deletes nothing and submits
// nothing), and returns the sites file's catalogue.
func loadRunSites(o *RunOptions, g *Globals) (*srm.Sites, error) {
	if o.Sites == "" {
		return nil, usagef("no sites file: give --sites FILE (or ASO_SITES)")
	}
	sites, err := srm.LoadSites(o.Sites)
	if err != nil {
		return nil, permanentError{fmt.Errorf("sites file: %w", err)}
	}
	if err := o.Beyond.apply(&o.Agent); err != nil {
		return nil, err
	}
	if !o.Agent.DryRun { // a dry run deletes nothing and submits nothing
		if err := checkRunEnvironment(o, g, sites); err != nil {
			return nil, permanentError{fmt.Errorf("this machine lacks what run needs:\n%w", err)}
		}
	}
	return sites, nil
}

// printQueue logs the user's queue by state after the run: it includes
// what the store settled itself (dependents of failed transfers, kills of
// unsubmitted ones), which the run's own counts do not.
func printQueue(ctx context.Context, g *Globals, store state.Store, user string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	sum, err := store.Summary(ctx, state.SummaryOptions{User: user})
	if err != nil {
		g.Log.WithError(err).Warn("cannot summarise the queue")
		return
	}
	fields := logrus.Fields{FieldUser: user}
	for _, s := range state.States {
		fields[string(s)] = sum.ByState[s]
	}
	g.Log.WithFields(fields).Info("queue after the run")
}

func printPlan(g *Globals, p agent.Plan) {
	fmt.Fprintf(g.Stdout, "dry run: %d transfers eligible, %d FTS jobs would be submitted\n", p.Eligible, len(p.Jobs))
	for _, j := range p.Jobs {
		prio := fmt.Sprint(j.MinPriority)
		if j.MaxPriority != j.MinPriority {
			prio = fmt.Sprintf("%d..%d", j.MinPriority, j.MaxPriority)
		}
		fmt.Fprintf(g.Stdout, "  job %s -> %s priority %s (FTS priority %d): %d files (e.g. %s -> %s)\n", j.Source, j.Destination, prio, j.Priority, j.Files, j.ExampleSource, j.ExampleDest)
	}
	if p.Blocked > 0 {
		fmt.Fprintf(g.Stdout, "  %d more waiting for their dependencies (not counted)\n", p.Blocked)
	}
	for _, e := range p.Unresolvable {
		fmt.Fprintf(g.Stdout, "  would abort %s: %s\n", e.ID, e.Reason)
	}
}
