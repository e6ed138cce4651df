package agent_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_FullJobs: jobs are filled to MaxFilesPerJob across claim
// batches (40 claimed at a time, 15 files a job: not 15+15+10 per batch),
// and the jobs of a pass are monitored in one bulk status request.
func TestAgent_FullJobs(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(100)
	cfg := w.config("agent-1")
	if err := w.agent(cfg, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Fatalf("%s: %s %q, want done", r.ID(), got.State, got.Reason)
		}
	}
	perJob := map[string]int{}
	for _, f := range w.sim.Files() {
		perJob[f.JobID]++
	}
	short := 0
	for job, n := range perJob {
		if n < cfg.MaxFilesPerJob {
			short++
			if n != 100%cfg.MaxFilesPerJob {
				t.Errorf("job %s has %d files, want %d or %d", job, n, cfg.MaxFilesPerJob, 100%cfg.MaxFilesPerJob)
			}
		}
	}
	if got, want := len(perJob), (100+cfg.MaxFilesPerJob-1)/cfg.MaxFilesPerJob; got != want || short != 1 {
		t.Errorf("%d jobs (%d not full), want %d (1 not full)", got, short, want)
	}
	req := w.sim.Requests()
	if got, want := req["submit"], len(perJob); got != want {
		t.Errorf("%d submissions, want %d", got, want)
	}
	if got := req["status"]; got != 1 {
		t.Errorf("%d status requests for %d jobs finished at the first query, want 1", got, len(perJob))
	}
}

// TestAgent_CredentialsRefusedSeveralJobs: when FTS refuses the credentials
// on the first of several jobs whose sids were written together, the
// transfers of every job, sent or not, are released without penalty and
// without their sid; so are those of the next claim, made while the first
// batch was being submitted.
func TestAgent_CredentialsRefusedSeveralJobs(t *testing.T) {
	for _, c := range []struct {
		name string
		n    func(batch int) int
	}{
		{"one claim", func(batch int) int { return batch }}, // its full jobs are written together
		{"next claim in flight", func(batch int) int { return 2*batch + 5 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, ftstest.Options{})
			cfg := w.config("agent-1")
			reqs := w.goodRequests(c.n(cfg.BatchSize))
			a, err := agent.New(cfg, w.open("agent-1"), refusingFTS{w.client}, w.sites, w.deleter, w.log)
			must(t, err)
			if err := a.Run(context.Background()); !errors.Is(err, fts.ErrUnauthorized) {
				t.Fatalf("Run = %v, want ErrUnauthorized", err)
			}
			for _, r := range reqs {
				if tr := w.get(r.ID()); tr.State != state.StateNew || tr.Attempts != 0 || tr.SubmitSID != "" || tr.Owner != "" {
					t.Errorf("%s: %s attempts %d sid %q owner %q, want released without penalty", tr.ID, tr.State, tr.Attempts, tr.SubmitSID, tr.Owner)
				}
			}
		})
	}
}

// slowFTS answers each submission after a delay (refusing the credentials
// when refuse is set) and records how many were in flight at once.
type slowFTS struct {
	agent.FTS
	delay    time.Duration
	refuse   bool
	mu       sync.Mutex
	inFlight int
	maxIn    int
	calls    int
}

func (s *slowFTS) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	s.mu.Lock()
	s.calls++
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	time.Sleep(s.delay) // FTS's latency, the test's subject: not a poll
	if s.refuse {
		return "", &fts.HTTPError{StatusCode: 401, Message: "A valid X509 certificate or proxy is needed"}
	}
	return s.FTS.Submit(ctx, sub)
}

// TestAgent_ConcurrentSubmissions: the jobs of one claim are sent to FTS a
// few at a time, not one after the other, and every transfer still ends
// done exactly once; when FTS refuses the credentials, no job is sent after
// the refusal is known.
func TestAgent_ConcurrentSubmissions(t *testing.T) {
	t.Run("accepted", func(t *testing.T) {
		w := newWorld(t, ftstest.Options{})
		cfg := w.config("agent-1")
		cfg.MaxFilesPerJob = 5
		reqs := w.goodRequests(cfg.BatchSize) // 8 jobs written together
		slow := &slowFTS{FTS: w.client, delay: 50 * time.Millisecond}
		a, err := agent.New(cfg, w.open("agent-1"), slow, w.sites, w.deleter, w.log)
		must(t, err)
		must(t, a.Run(context.Background()))
		if slow.calls != 8 || slow.maxIn < 2 || slow.maxIn > 4 {
			t.Errorf("%d submissions, at most %d at once; want 8, 2 to 4 at once", slow.calls, slow.maxIn)
		}
		for _, r := range reqs {
			if tr := w.get(r.ID()); tr.State != state.StateDone {
				t.Errorf("%s: %s, want done", tr.ID, tr.State)
			}
		}
		if got := w.sim.Requests()["submit"]; got != 8 {
			t.Errorf("the simulator saw %d submissions, want 8", got)
		}
	})
	t.Run("credentials refused", func(t *testing.T) {
		w := newWorld(t, ftstest.Options{})
		cfg := w.config("agent-1")
		cfg.MaxFilesPerJob = 5
		reqs := w.goodRequests(cfg.BatchSize)
		slow := &slowFTS{FTS: w.client, delay: 50 * time.Millisecond, refuse: true}
		a, err := agent.New(cfg, w.open("agent-1"), slow, w.sites, w.deleter, w.log)
		must(t, err)
		if err := a.Run(context.Background()); !errors.Is(err, fts.ErrUnauthorized) {
			t.Fatalf("Run = %v, want ErrUnauthorized", err)
		}
		if slow.calls > 4 {
			t.Errorf("%d submissions after FTS refused the credentials, want those already in flight (at most 4)", slow.calls)
		}
		for _, r := range reqs {
			if tr := w.get(r.ID()); tr.State != state.StateNew || tr.Attempts != 0 || tr.SubmitSID != "" {
				t.Errorf("%s: %s attempts %d sid %q, want released without penalty", tr.ID, tr.State, tr.Attempts, tr.SubmitSID)
			}
		}
	})
}

// claimCounter counts the claims started on its store, and closes second
// when the second one starts.
type claimCounter struct {
	agent.Store
	started atomic.Int32
	second  chan struct{}
}

func (c *claimCounter) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	if c.started.Add(1) == 2 {
		close(c.second)
	}
	return c.Store.NewTransfers(ctx, r)
}

// firstWaitsFTS holds the first submission until ready is closed (at most
// two seconds) and records whether it had to give up.
type firstWaitsFTS struct {
	agent.FTS
	ready <-chan struct{}
	calls atomic.Int32
	late  atomic.Bool
}

func (f *firstWaitsFTS) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	if f.calls.Add(1) == 1 {
		select {
		case <-f.ready:
		case <-time.After(2 * time.Second):
			f.late.Store(true)
		}
	}
	return f.FTS.Submit(ctx, sub)
}

// TestAgent_ClaimsWhileSubmitting: after a full claim the next batch is
// claimed while the first is sent to FTS (the first submission waits for
// that claim to start, which never happens if claims wait for
// submissions), and every transfer is still submitted once and ends done.
func TestAgent_ClaimsWhileSubmitting(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	cfg := w.config("agent-1")
	cfg.MaxFilesPerJob = 10
	reqs := w.goodRequests(100) // claims of 40, 40 and 20: ten jobs
	store := &claimCounter{Store: w.open("agent-1"), second: make(chan struct{})}
	f := &firstWaitsFTS{FTS: w.client, ready: store.second}
	a, err := agent.New(cfg, store, f, w.sites, w.deleter, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	if f.late.Load() {
		t.Errorf("the first job was sent before the second claim started: claims waited for submissions")
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateDone {
			t.Errorf("%s: %s %q, want done", tr.ID, tr.State, tr.Reason)
		}
	}
	if got := w.sim.Requests()["submit"]; got != 10 {
		t.Errorf("the simulator saw %d submissions, want 10", got)
	}
	if got := len(w.sim.Files()); got != 100 {
		t.Errorf("the simulator holds %d files, want 100 (each transfer once)", got)
	}
}
