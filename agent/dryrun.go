package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Plan is what a dry run would submit.
type Plan struct {
	Eligible     int         // transfers that would be claimed
	Blocked      int         // transfers due but waiting for their dependencies (not in Eligible)
	Jobs         []PlanJob   // FTS jobs that would be submitted
	Unresolvable []PlanError // transfers that would be aborted
}

// PlanJob is one FTS job of a Plan.
type PlanJob struct {
	Source, Destination string
	Priority            int // FTS priority 1..5
	// MinPriority and MaxPriority are the priorities of the job's
	// transfers (several map to one FTS priority)
	MinPriority, MaxPriority int
	Files                    int
	// Example is the first file of the job: source and destination PFN.
	ExampleSource, ExampleDest string
}

// PlanError is a transfer whose PFNs cannot be resolved.
type PlanError struct {
	ID, Reason string
}

// dryRun claims nothing: it lists the transfers that are eligible now (one
// batch), resolves their PFNs and reports the jobs that would be submitted.
func dryRun(ctx context.Context, cfg Config, store Store, plan *planner) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	ts, err := store.List(ctx, state.Filter{User: cfg.User, States: []state.State{state.StateNew}})
	if err != nil {
		return fmt.Errorf("dry run: list transfers of %s: %w", cfg.User, err)
	}
	now := cfg.Now()
	eligible := ts[:0]
	for _, t := range ts {
		if state.Claimable(&t, cfg.User, now) && !t.KillRequested {
			eligible = append(eligible, t)
		}
	}
	eligible, blocked, err := unblocked(ctx, store, eligible, now, cfg.Policy.DependencyWait)
	if err != nil {
		return fmt.Errorf("dry run: dependencies of %s's transfers: %w", cfg.User, err)
	}
	state.SortForClaim(eligible)
	if len(eligible) > cfg.BatchSize {
		eligible = eligible[:cfg.BatchSize]
	}
	jobs, aborts := plan.plan(eligible, nil)
	byID := map[string]state.Transfer{}
	for _, t := range eligible {
		byID[t.ID] = t
	}
	p := Plan{Eligible: len(eligible), Blocked: blocked}
	for _, j := range jobs {
		t := byID[j.files[0].id]
		pj := PlanJob{Source: t.Source, Destination: t.Destination, Priority: j.prio, Files: len(j.files),
			MinPriority: t.Priority, MaxPriority: t.Priority, ExampleSource: j.files[0].src, ExampleDest: j.files[0].dst}
		for _, f := range j.files {
			pj.MinPriority, pj.MaxPriority = min(pj.MinPriority, byID[f.id].Priority), max(pj.MaxPriority, byID[f.id].Priority)
		}
		p.Jobs = append(p.Jobs, pj)
	}
	for _, ab := range aborts {
		p.Unresolvable = append(p.Unresolvable, PlanError{ID: ab.Transfer.ID, Reason: ab.Reason})
	}
	if cfg.OnPlan != nil {
		cfg.OnPlan(p)
	}
	return nil
}

// unblocked returns the transfers of ts whose dependencies are all done,
// reading the dependencies in one call, and how many were left out.
func unblocked(ctx context.Context, store Store, ts []state.Transfer, now time.Time, wait time.Duration) ([]state.Transfer, int, error) {
	g := state.DepGraph{}
	ids := g.Frontier(ts, nil)
	if len(ids) > 0 {
		deps, err := store.List(ctx, state.Filter{IDs: ids})
		if err != nil {
			return nil, 0, err
		}
		for i := range deps {
			g.Add(&deps[i])
		}
	}
	d := g.Deps(wait)
	out := ts[:0]
	for _, t := range ts {
		if v, _ := state.CheckDeps(&t, d, now); v == state.DepsReady {
			out = append(out, t)
		}
	}
	return out, len(ts) - len(out), nil
}
