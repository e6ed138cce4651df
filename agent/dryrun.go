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
	Files               int
	// Example is the first file of the job: source and destination PFN.
	ExampleSource, ExampleDest string
}

// PlanError is a transfer whose PFNs cannot be resolved.
type PlanError struct {
	ID, Reason string
}

// dryRun claims nothing: it lists the transfers that are eligible now (one
// batch), resolves their PFNs and reports the jobs that would be submitted.
func (a *Agent) dryRun(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.PhaseTimeout)
	defer cancel()
	ts, err := a.store.List(ctx, state.Filter{User: a.cfg.User, States: []state.State{state.StateNew}})
	if err != nil {
		return fmt.Errorf("dry run: list transfers of %s: %w", a.cfg.User, err)
	}
	now := a.cfg.Now()
	eligible := ts[:0]
	for _, t := range ts {
		if state.Claimable(&t, a.cfg.User, now) && !t.KillRequested {
			eligible = append(eligible, t)
		}
	}
	eligible, blocked, err := a.unblocked(ctx, eligible, now)
	if err != nil {
		return fmt.Errorf("dry run: dependencies of %s's transfers: %w", a.cfg.User, err)
	}
	state.SortForClaim(eligible)
	if len(eligible) > a.cfg.BatchSize {
		eligible = eligible[:a.cfg.BatchSize]
	}
	jobs, aborts := a.plan(eligible)
	byID := map[string]state.Transfer{}
	for _, t := range eligible {
		byID[t.ID] = t
	}
	p := Plan{Eligible: len(eligible), Blocked: blocked}
	for _, j := range jobs {
		t := byID[j.ids[0]]
		p.Jobs = append(p.Jobs, PlanJob{Source: t.Source, Destination: t.Destination, Priority: j.prio, Files: len(j.files),
			ExampleSource: j.files[0].src, ExampleDest: j.files[0].dst})
	}
	for _, ab := range aborts {
		p.Unresolvable = append(p.Unresolvable, PlanError{ID: ab.Transfer.ID, Reason: ab.Reason})
	}
	if a.Report != nil {
		a.Report(p)
	}
	return nil
}

// unblocked returns the transfers of ts whose dependencies are all done,
// reading the dependencies in one call, and how many were left out.
func (a *Agent) unblocked(ctx context.Context, ts []state.Transfer, now time.Time) ([]state.Transfer, int, error) {
	g := state.DepGraph{}
	ids := g.Frontier(ts, nil)
	if len(ids) > 0 {
		deps, err := a.store.List(ctx, state.Filter{IDs: ids})
		if err != nil {
			return nil, 0, err
		}
		for i := range deps {
			g.Add(&deps[i])
		}
	}
	d := g.Deps(a.cfg.Policy.DependencyWait)
	out := ts[:0]
	for _, t := range ts {
		if v, _ := state.CheckDeps(&t, d, now); v == state.DepsReady {
			out = append(out, t)
		}
	}
	return out, len(ts) - len(out), nil
}
