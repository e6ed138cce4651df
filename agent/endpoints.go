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
	// fenced like the agent's own: a resubmission or a cancellation here
	// is as much an action on the user's queue
	f = fencedFTS{instrumentedFTS{f, a.metrics}, a}
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
// The agent's own endpoint is not asked again when early holds its answer
// (see early): early's answers are taken for the jobs that are the
// endpoint's.
func (a *Agent) statusAt(ctx context.Context, jobs []state.Job, early *earlyStatus) ([]fts.JobStatus, error) {
	byEndpoint := map[string][]int{}
	for i, j := range jobs {
		ep := endpointOf(j.Transfers)
		byEndpoint[ep] = append(byEndpoint[ep], i)
	}
	out := make([]fts.JobStatus, len(jobs))
	for _, ep := range sortedKeys(byEndpoint) {
		idx := byEndpoint[ep]
		if early != nil && a.own(ep) {
			// the early request asked for exactly these jobs when all are the
			// endpoint's: its failure is theirs (a hung FTS is not waited on
			// twice); otherwise it may have failed on another endpoint's job
			ok, err := early.fill(jobs, idx, out, len(idx) == len(jobs))
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
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

// own reports whether endpoint is served by the agent's own client.
func (a *Agent) own(endpoint string) bool {
	return endpoint == "" || a.cfg.FTSEndpoint == "" || endpoint == a.cfg.FTSEndpoint
}

// earlyStatus is the status of a group's jobs asked of the agent's own
// endpoint while the group's transfers are still being read from the
// store: the two requests overlap instead of following each other. Status
// is a read of FTS, so asking before the transfers are read changes
// nothing but the age of the answer (a pass older, at worst, which the
// next pass makes up); a job of another endpoint is still asked there.
type earlyStatus struct {
	done chan struct{}
	sts  map[string]fts.JobStatus
	err  error
}

// askEarly starts asking the agent's own endpoint for the status of ids.
func (a *Agent) askEarly(ctx context.Context, ids []string) *earlyStatus {
	e := &earlyStatus{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		sts, err := a.fts.Status(ctx, ids)
		if err != nil {
			e.err = err
			return
		}
		e.sts = make(map[string]fts.JobStatus, len(sts))
		for _, st := range sts {
			e.sts[st.JobID] = st
		}
	}()
	return e
}

// wait waits for the answer.
func (e *earlyStatus) wait() {
	if e != nil {
		<-e.done
	}
}

// fill puts the answers for jobs[idx] into out. It reports false, and
// fills nothing, when the early request missed one of them or failed, or
// answered one with an error while it also asked for other jobs: the
// caller asks again. When the request asked for exactly these jobs (same),
// its failure and its errors are theirs, as a second request's would be.
func (e *earlyStatus) fill(jobs []state.Job, idx []int, out []fts.JobStatus, same bool) (bool, error) {
	e.wait()
	if e.err != nil {
		if same {
			return false, e.err
		}
		return false, nil
	}
	for _, i := range idx {
		st, ok := e.sts[jobs[i].ID]
		if !ok || (st.Err != nil && !same) {
			// an entry with an error may be the doing of another
			// endpoint's job in the same request: asked again without it
			return false, nil
		}
	}
	for _, i := range idx {
		out[i] = e.sts[jobs[i].ID]
	}
	return true, nil
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
