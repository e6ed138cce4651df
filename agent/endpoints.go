package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// endpoints are the agent's FTS clients. A job stays with the FTS server
// it was submitted to: each submission records its endpoint
// (Transfer.FTSEndpoint) in the same write as its submit_sid, and
// monitoring, cancelling, adoption and the resubmission of a job FTS never
// saw all go to that endpoint; the agent's own endpoint (the server of
// --fts) only receives new jobs. Without this, changing --fts between runs
// would make every active job look lost on the new server and be
// submitted again: a duplicate transfer.
type endpoints struct {
	name    string // the agent's own endpoint ("": none recorded)
	own     FTS    // its client, timed and fenced
	open    func(ctx context.Context, endpoint string) (FTS, error)
	metrics *Metrics
	fence   *keeper
	log     *logrus.Entry

	mu     sync.Mutex
	others map[string]FTS // opened by open, by endpoint
}

func newEndpoints(cfg Config, f FTS, m *Metrics, k *keeper, log *logrus.Entry) *endpoints {
	return &endpoints{name: cfg.FTSEndpoint, own: fencedFTS{instrumentedFTS{f, m}, k}, open: cfg.OpenFTS,
		metrics: m, fence: k, log: log, others: map[string]FTS{}}
}

// isOwn reports whether endpoint is served by the agent's own client: its
// own endpoint, "" (transfers written before endpoints were recorded), or
// any when the agent has no endpoint name.
func (e *endpoints) isOwn(endpoint string) bool {
	return endpoint == "" || e.name == "" || endpoint == e.name
}

// at returns the client of endpoint: the agent's own (see isOwn),
// otherwise one opened with the run's credentials, once per run.
func (e *endpoints) at(ctx context.Context, endpoint string) (FTS, error) {
	if e.isOwn(endpoint) {
		return e.own, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.others[endpoint]; ok {
		return f, nil
	}
	if e.open == nil {
		return nil, fmt.Errorf("FTS endpoint %s holds jobs of this user, and this agent cannot reach other endpoints", endpoint)
	}
	f, err := e.open(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("FTS endpoint %s (holding earlier jobs): %w", endpoint, err)
	}
	// fenced like the agent's own: a resubmission or a cancellation here
	// is as much an action on the user's queue
	f = fencedFTS{instrumentedFTS{f, e.metrics}, e.fence}
	e.others[endpoint] = f
	e.log.WithField("endpoint", endpoint).Info("following jobs submitted to another FTS endpoint")
	return f, nil
}

// statusAt asks each job's endpoint for its status, one bulk request per
// endpoint, and returns the statuses in the order of jobs. A job whose
// endpoint cannot be reached gets Err, so it is only skipped this pass.
// The agent's own endpoint is not asked again when early holds its answer.
func (e *endpoints) statusAt(ctx context.Context, jobs []state.Job, early *earlyStatus) ([]fts.JobStatus, error) {
	byEndpoint := map[string][]int{}
	for i, j := range jobs {
		ep := ""
		if len(j.Transfers) > 0 {
			ep = j.Transfers[0].FTSEndpoint
		}
		byEndpoint[ep] = append(byEndpoint[ep], i)
	}
	out := make([]fts.JobStatus, len(jobs))
	for _, ep := range slices.Sorted(maps.Keys(byEndpoint)) {
		idx := byEndpoint[ep]
		if early != nil && e.isOwn(ep) {
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
		if err := e.statusOf(ctx, ep, jobs, idx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statusOf asks endpoint ep for the status of jobs[idx] into out; an
// endpoint out of reach sets Err on each of them.
func (e *endpoints) statusOf(ctx context.Context, ep string, jobs []state.Job, idx []int, out []fts.JobStatus) error {
	ids := make([]string, len(idx))
	for k, i := range idx {
		ids[k] = jobs[i].ID
	}
	f, err := e.at(ctx, ep)
	if err != nil {
		for _, i := range idx {
			out[i] = fts.JobStatus{JobID: jobs[i].ID, Err: err}
		}
		return nil
	}
	sts, err := f.Status(ctx, ids)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if k < len(sts) {
			out[i] = sts[k]
		}
	}
	return nil
}

// askEarly starts asking the agent's own endpoint for the status of ids.
func (e *endpoints) askEarly(ctx context.Context, ids []string) *earlyStatus {
	s := &earlyStatus{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sts, err := e.own.Status(ctx, ids)
		if err != nil {
			s.err = err
			return
		}
		s.sts = make(map[string]fts.JobStatus, len(sts))
		for _, st := range sts {
			s.sts[st.JobID] = st
		}
	}()
	return s
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

// wait waits for the answer.
func (s *earlyStatus) wait() {
	if s != nil {
		<-s.done
	}
}

// fill puts the answers for jobs[idx] into out. It reports false, and
// fills nothing, when the early request missed one of them or failed, or
// answered one with an error while it also asked for other jobs: the
// caller asks again. When the request asked for exactly these jobs (same),
// its failure and its errors are theirs, as a second request's would be.
func (s *earlyStatus) fill(jobs []state.Job, idx []int, out []fts.JobStatus, same bool) (bool, error) {
	s.wait()
	if s.err != nil {
		if same {
			return false, s.err
		}
		return false, nil
	}
	for _, i := range idx {
		st, ok := s.sts[jobs[i].ID]
		if !ok || (st.Err != nil && !same) {
			// an entry with an error may be the doing of another
			// endpoint's job in the same request: asked again without it
			return false, nil
		}
	}
	for _, i := range idx {
		out[i] = s.sts[jobs[i].ID]
	}
	return true, nil
}
