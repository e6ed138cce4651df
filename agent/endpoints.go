package agent

import (
	"context"
	"fmt"
	"sort"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// A job stays with the FTS server it was submitted to. Each submission
// records its endpoint (Transfer.FTSEndpoint) in the same write as its
// submit_sid, and monitoring, cancelling, adoption and the resubmission of
// a job FTS never saw all go to that endpoint; Config.FTSEndpoint (the
// server of --fts) only receives new jobs. Without this, changing --fts
// between runs would make every active job look lost on the new server and
// be submitted again: a duplicate transfer.

// ftsAt returns the client of endpoint: the agent's own for its endpoint,
// for "" (transfers written before endpoints were recorded) and when the
// agent has no endpoint name; otherwise one opened by OpenFTS with the
// run's credentials, once per run.
func (a *Agent) ftsAt(ctx context.Context, endpoint string) (FTS, error) {
	if endpoint == "" || a.cfg.FTSEndpoint == "" || endpoint == a.cfg.FTSEndpoint {
		return a.fts, nil
	}
	a.othersMu.Lock()
	defer a.othersMu.Unlock()
	if f, ok := a.others[endpoint]; ok {
		return f, nil
	}
	if a.OpenFTS == nil {
		return nil, fmt.Errorf("FTS endpoint %s holds jobs of this user, and this agent cannot reach other endpoints", endpoint)
	}
	f, err := a.OpenFTS(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("FTS endpoint %s (holding earlier jobs): %w", endpoint, err)
	}
	f = instrumentedFTS{f, a.metrics}
	a.others[endpoint] = f
	a.log.WithField("endpoint", endpoint).Info("following jobs submitted to another FTS endpoint")
	return f, nil
}

// endpointOf is the endpoint holding the job of a group of transfers.
func endpointOf(ts []state.Transfer) string {
	if len(ts) == 0 {
		return ""
	}
	return ts[0].FTSEndpoint
}

// statusAt asks each job's endpoint for its status, one bulk request per
// endpoint, and returns the statuses in the order of jobs. A job whose
// endpoint cannot be reached gets Err, so it is only skipped this pass.
func (a *Agent) statusAt(ctx context.Context, jobs []state.Job) ([]fts.JobStatus, error) {
	byEndpoint := map[string][]int{}
	for i, j := range jobs {
		ep := endpointOf(j.Transfers)
		byEndpoint[ep] = append(byEndpoint[ep], i)
	}
	out := make([]fts.JobStatus, len(jobs))
	for _, ep := range sortedKeys(byEndpoint) {
		idx := byEndpoint[ep]
		ids := make([]string, len(idx))
		for k, i := range idx {
			ids[k] = jobs[i].ID
		}
		f, err := a.ftsAt(ctx, ep)
		if err != nil {
			for _, i := range idx {
				out[i] = fts.JobStatus{JobID: jobs[i].ID, Err: err}
			}
			continue
		}
		sts, err := f.Status(ctx, ids)
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			if k < len(sts) {
				out[i] = sts[k]
			}
		}
	}
	return out, nil
}

// pendingByEndpoint groups the pending jobs by the endpoint their sid was
// submitted to, endpoints in a stable order.
func (a *Agent) pendingByEndpoint() ([]string, map[string][]*pendingJob) {
	m := map[string][]*pendingJob{}
	for _, p := range a.book.pendingJobs() {
		m[p.endpoint] = append(m[p.endpoint], p)
	}
	return sortedKeys(m), m
}

// newEndpoint is the endpoint recorded for the jobs this agent submits: its
// own, when the store records endpoints (state.RecordsEndpoint).
func (a *Agent) newEndpoint() string {
	if !state.RecordsEndpoint(a.book.multi) {
		return ""
	}
	return a.cfg.FTSEndpoint
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
