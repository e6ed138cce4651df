package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/tokens"
)

// BeyondOptions are the flags of `aso run` for storage tokens, scitags and
// the run report.
type BeyondOptions struct {
	TokenFile        string
	TokenCommand     string
	TokenTimeout     time.Duration
	TokenMinLifetime time.Duration
	UnmanagedTokens  bool
	ScitagActivity   int
	MaxActivePerLink int
	Report           string
}

// AddFlags registers the flags.
func (o *BeyondOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.TokenFile, "storage-token-file", "", "file holding the user's storage token (a JWT kept fresh by another program), for sites with tokens: true")
	f.StringVar(&o.TokenCommand, "storage-token-command", "", `command printing a storage token for a scope, run without a shell (e.g. "oidc-token --scope={scope} cms"); without {scope} the scope is written on its stdin`)
	f.DurationVar(&o.TokenTimeout, "storage-token-timeout", tokens.DefaultTimeout, "bound of one run of --storage-token-command")
	f.DurationVar(&o.TokenMinLifetime, "storage-token-min-lifetime", tokens.DefaultMinLifetime, "a storage token is refreshed when it has less than this left (set it to the time a job may spend in FTS)")
	f.BoolVar(&o.UnmanagedTokens, "unmanaged-tokens", false, "tell FTS (3.14+) not to refresh the storage tokens (unmanaged_tokens): aso sends tokens valid for --storage-token-min-lifetime")
	f.IntVar(&o.ScitagActivity, "scitag-activity", 1, "network activity of the scitag of every file (CMS experiment 3 << 6 | activity) whose transfer names none")
	f.IntVar(&o.MaxActivePerLink, "max-active-per-link", 0, "cap of one link's transfers this run holds (claimed or in FTS); claims then go round the links, priority first, so a slow link's backlog does not hold back the others (without a cap: queue order)")
	f.StringVar(&o.Report, "report", "", "write a JSON report of the run to this file (atomically), even when the run fails; a path that cannot be written or names one of aso's inputs (the store, the sites or configuration file) is refused before the run")
}

// apply checks the flags and sets them on cfg.
func (o *BeyondOptions) apply(cfg *agent.Config) error {
	if o.TokenFile != "" && o.TokenCommand != "" {
		return usagef("--storage-token-file and --storage-token-command: give one")
	}
	cfg.ScitagActivity, cfg.UnmanagedTokens, cfg.MaxActivePerLink = o.ScitagActivity, o.UnmanagedTokens, o.MaxActivePerLink
	src := &tokens.Source{File: o.TokenFile, Timeout: o.TokenTimeout, MinLifetime: o.TokenMinLifetime}
	if o.TokenCommand != "" {
		src.Command = strings.Fields(o.TokenCommand)
	}
	if src.File != "" || len(src.Command) > 0 {
		cfg.StorageTokens = src
	}
	return nil
}

// tokenError marks a run stopped for want of storage tokens as a
// configuration error (ExitConfig): a person must act.
func tokenError(err error) error {
	if errors.Is(err, agent.ErrStorageToken) {
		return permanentError{err}
	}
	return err
}

// RunReport is the JSON document --report writes once per run.
type RunReport struct {
	User     string    `json:"user"`
	Agent    string    `json:"agent"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
	// ByState, ByErrorClass and ByLink count the user's transfers after
	// the run (nil when the store could not be read).
	ByState      map[state.State]int            `json:"by_state"`
	ByErrorClass map[string]int                 `json:"by_error_class"`
	ByLink       map[string]map[state.State]int `json:"by_link"`
	// the run's passes added up (agent.PassStats.Add): every transfer the
	// run claimed, ended or sent back, once each, its FTS jobs and
	// deletions, as the log, the progress and the metrics count them
	agent.PassStats
	// FTS status requests and job polls.
	FTSStatusCalls int                `json:"fts_status_calls"`
	FTSJobsPolled  int                `json:"fts_jobs_polled"`
	NextRetry      *time.Time         `json:"next_retry,omitempty"`
	PhaseSeconds   map[string]float64 `json:"phase_seconds"`
}

// runReport collects a RunReport during a run.
type runReport struct {
	RunReport
	mu         sync.Mutex
	phaseStart time.Time
}

// readQueue reads the queue into the report.
func (r *runReport) readQueue(ctx context.Context, g *Globals, store state.Store) {
	if err := r.queue(ctx, store, r.User); err != nil {
		g.Log.WithError(err).Warn("run report: cannot read the queue")
	}
	r.phase("report")
}

// finish writes the report.
func (r *runReport) finish(_ context.Context, g *Globals, path string, err error) {
	if werr := r.write(path, err); werr != nil {
		if g.Log == nil { // the configuration could not be loaded
			fmt.Fprintf(g.Stderr, "aso: writing the run report failed: %v\n", werr)
			return
		}
		g.Log.WithError(werr).Warn("writing the run report failed")
	}
}

func newRunReport() *runReport {
	r := &runReport{}
	r.Started, r.phaseStart = time.Now().UTC(), time.Now()
	r.PhaseSeconds = map[string]float64{}
	return r
}

// phase closes the current phase under name and starts the next.
func (r *runReport) phase(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.PhaseSeconds[name] += now.Sub(r.phaseStart).Seconds()
	r.phaseStart = now
}

// pass adds a pass's statistics.
func (r *runReport) pass(ps agent.PassStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Add(ps)
	r.PhaseSeconds["submit"] = r.Submit.Seconds()
	r.PhaseSeconds["monitor"] = r.Monitor.Seconds()
	r.PhaseSeconds["record"] = r.Record.Seconds()
}

// queue reads the counts and the next retry time from the store.
func (r *runReport) queue(ctx context.Context, store state.Store, user string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	sum, err := store.Summary(ctx, state.SummaryOptions{User: user})
	if err != nil {
		return err
	}
	r.ByState, r.ByErrorClass, r.ByLink = sum.ByState, sum.ByErrorClass, sum.ByLink
	waiting, err := store.List(ctx, state.Filter{User: user, States: []state.State{state.StateNew}})
	if err != nil {
		return err
	}
	for _, t := range waiting {
		if at := t.RetryAfter.Time; !at.IsZero() && (r.NextRetry == nil || at.Before(*r.NextRetry)) {
			at = at.UTC()
			r.NextRetry = &at
		}
	}
	return nil
}

// write writes the report to path atomically: a temporary file in the
// same directory, renamed over path.
func (r *runReport) write(path string, err error) error {
	r.mu.Lock()
	r.Finished = time.Now().UTC()
	r.ExitCode = ExitCode(err)
	if err != nil {
		r.Error = err.Error()
	}
	b, merr := json.MarshalIndent(r.RunReport, "", "  ")
	r.mu.Unlock()
	if merr != nil {
		return merr
	}
	tmp, terr := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if terr != nil {
		return fmt.Errorf("run report: %w", terr)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("run report: %w", werr)
	}
	return nil
}

// countingFTS counts the status requests the agent makes.
type countingFTS struct {
	agent.FTS
	r *runReport
}

func (c countingFTS) Status(ctx context.Context, ids []string) ([]fts.JobStatus, error) {
	c.r.mu.Lock()
	c.r.FTSStatusCalls++
	c.r.FTSJobsPolled += len(ids)
	c.r.mu.Unlock()
	return c.FTS.Status(ctx, ids)
}
