package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Defaults of Config.
const (
	DefaultBatchSize      = 2000
	DefaultMaxFilesPerJob = 200
	DefaultInterval       = 60 * time.Second
	DefaultUpdateWindow   = 15 * time.Minute
	DefaultLockTTL        = 5 * time.Minute
	DefaultPhaseTimeout   = 2 * time.Minute
	DefaultDeleteTimeout  = 3 * time.Minute
	DefaultMaxTimeInQueue = "12h"
	DefaultGiveUpAfter    = 10 * time.Minute // of aso run; zero in a Config is never
	// MaxDeleteAttempts bounds how many passes a failed destination deletion
	// is retried before the outcome is recorded anyway, with the deletion
	// failure in its reason.
	MaxDeleteAttempts = 3
	// MaxDeleteSkips bounds how many passes in which gfal-rm deleted
	// nothing a deletion may be skipped without counting as an attempt:
	// gfal-rm never tried it because a URL before it on the same storage
	// hung. A storage that hangs for every URL thus still ends in recorded
	// outcomes; one that hangs for some is worked through.
	MaxDeleteSkips = 10
)

// Config parameterises an Agent. Zero values mean the defaults.
type Config struct {
	// User, Owner, Policy and Now are those the store handle was opened
	// with (state.Config): the caller gives the same to both.
	User  string // whose queue
	Owner string // this agent's ID, host:pid:start-machine-random (holder.Holder)

	Policy         state.Policy  // lease TTL, cool-off, max attempts (the store applies them; the agent renews leases by LeaseTTL)
	BatchSize      int           // transfers claimed per NewTransfers call
	MaxFilesPerJob int           // files per FTS job
	Interval       time.Duration // sleep between passes; with FirstPoll, the longest
	// FirstPoll is the wait after a pass that changed something, doubled
	// after each pass that did not, up to Interval (Poller); 0 or more
	// than Interval: Interval, a fixed wait.
	FirstPoll     time.Duration
	UpdateWindow  time.Duration // every active transfer is touched at least this often
	LockTTL       time.Duration // run lock TTL; renewed every third
	PhaseTimeout  time.Duration // bound of each state-store or FTS call of a phase
	DeleteTimeout time.Duration // bound of one deletion batch
	Once          bool          // one pass only
	MaxRuntime    time.Duration // stop (gracefully) after this long; 0 = no limit
	// GiveUpAfter stops the run with ErrNoProgress once every pass for
	// this long had errors and none made progress; 0 = never.
	GiveUpAfter time.Duration
	DryRun      bool // claim nothing; report what would be submitted

	// MonitorGroup bounds the transfers the monitor phase holds at a time
	// when the store lists active transfers a few jobs at a time
	// (state.ActivePager): whole jobs, at least one per group. Default:
	// 5 x BatchSize (10,000 transfers, 50 full jobs, one status request),
	// so that the agent's memory follows the batch, not the queue: a
	// queue of 10,000 and one of 100,000 hold groups of the same size.
	MonitorGroup int

	// FTS job parameters.
	VerifyChecksum bool
	Overwrite      bool
	FTSRetry       int    // FTS-side retries (0: server default, <0: none)
	FTSRetryDelay  int    // seconds between FTS-side retries (0: server default)
	MaxTimeInQueue string // e.g. "12h"
	Activity       string
	// FTSEndpoint names the FTS server of the FTS client given to New: it is
	// recorded on each submitted transfer, and jobs recorded with another
	// endpoint are followed there (Agent.OpenFTS). "": none recorded.
	FTSEndpoint string

	// MaxActivePerLink caps the transfers of one link this agent holds
	// (claimed or submitted), and spreads claims over links (priority
	// first, then links in turn by oldest waiting): a slow link with a
	// huge backlog does not hold back the others. 0: no cap, claims in
	// queue order.
	MaxActivePerLink int

	// ScitagActivity is the network activity (1..63) marked in the scitag
	// of every file whose transfer names none; 0 marks no scitag then.
	ScitagActivity int
	// StorageTokens gives the storage tokens of files to or from sites
	// that take them (the sites' TokenScope); nil: no tokens are sent,
	// and a transfer needing one is not submitted (the run fails).
	StorageTokens StorageTokens
	// UnmanagedTokens asks FTS (3.14+) not to refresh the tokens: aso
	// sends tokens valid for the job's lifetime.
	UnmanagedTokens bool

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits between passes; nil means a timer. Tests replace it.
	Sleep func(d time.Duration, stop <-chan struct{})
	// ExitCode maps the error a run ends with to the process's exit code,
	// recorded with the run in the lock document; nil: 0 or 1.
	ExitCode func(error) int
	// HolderGone, if set, tells whether the agent holding the user's live
	// run lock is known dead (its process is gone from this host), and
	// why: the lock is then taken over at once instead of after its
	// expiry. nil: a held lock is always waited out.
	HolderGone func(holder string) (why string, gone bool)

	// OpenFTS, if set, opens a client of another FTS endpoint, with the
	// run's credentials, for the jobs submitted there (see endpoints).
	OpenFTS func(ctx context.Context, endpoint string) (FTS, error)
	// OnPass, if set, is called after every pass with its statistics, and
	// once more at shutdown when releasing the claims changed anything.
	OnPass func(PassStats)
	// OnPlan, if set, receives the plan of a dry run.
	OnPlan func(Plan)
}

func (c Config) withDefaults() (Config, error) {
	if c.User == "" || c.Owner == "" {
		return c, fmt.Errorf("agent: user and owner are required")
	}
	if c.GiveUpAfter < 0 {
		return c, fmt.Errorf("agent: give-up-after %s: must not be negative", c.GiveUpAfter)
	}
	c.Policy = c.Policy.WithDefaults()
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BatchSize, DefaultBatchSize)
	def(&c.MaxFilesPerJob, DefaultMaxFilesPerJob)
	def(&c.MonitorGroup, 5*c.BatchSize)
	defd(&c.Interval, DefaultInterval)
	defd(&c.UpdateWindow, DefaultUpdateWindow)
	defd(&c.LockTTL, DefaultLockTTL)
	defd(&c.PhaseTimeout, DefaultPhaseTimeout)
	defd(&c.DeleteTimeout, DefaultDeleteTimeout)
	if c.MaxTimeInQueue == "" {
		c.MaxTimeInQueue = DefaultMaxTimeInQueue
	}
	if c.Activity == "" {
		c.Activity = "ASO"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = func(d time.Duration, stop <-chan struct{}) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-stop:
			}
		}
	}
	return c, nil
}
