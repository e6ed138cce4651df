package agent_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// queuedOverTheirs enqueues one transfer whose destination already holds
// somebody else's file and runs one pass of an agent with cfg (Once),
// which submits it; FTS keeps its file queued. It returns the world, the
// request, cfg and the content of that file.
func queuedOverTheirs(t *testing.T) (*world, state.Request, agent.Config, []byte) {
	t.Helper()
	w := newWorld(t, ftstest.Options{QueueDelay: time.Hour})
	r, _ := w.request("taken", 0, true)
	theirs := []byte("somebody else's file")
	w.writeFile(w.dstPath(r), theirs)
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	return w, r, cfg, theirs
}

// TestAgent_LostJobLeavesTheDestinationAlone: FTS loses a job before it
// ran. The agent cannot know whether anything at the destination was
// written by that job (here it is somebody else's file, which FTS would
// have refused to overwrite), so it must not delete it: the transfer goes
// back to the queue and the file stays.
func TestAgent_LostJobLeavesTheDestinationAlone(t *testing.T) {
	w, r, cfg, theirs := queuedOverTheirs(t)
	files := w.sim.Files()
	if len(files) != 1 {
		t.Fatalf("%d files submitted, want 1", len(files))
	}
	w.sim.LoseJob(files[0].JobID)
	must(t, w.agent(cfg, nil).Run(context.Background()))

	if got := w.get(r.ID()); got.State != state.StateNew || got.FTSJob != "" {
		t.Errorf("after the loss: %s in job %q, want new without a job", got.State, got.FTSJob)
	}
	if got, err := os.ReadFile(w.dstPath(r)); err != nil || string(got) != string(theirs) {
		t.Errorf("the file at the destination was changed or deleted after a lost job: %q, %v", got, err)
	}
}

// TestAgent_KillBeforeStartLeavesTheDestinationAlone: a transfer killed
// while its FTS file is still queued never ran, so the file at its
// destination (here somebody else's) is not its doing and must stay.
func TestAgent_KillBeforeStartLeavesTheDestinationAlone(t *testing.T) {
	w, r, cfg, theirs := queuedOverTheirs(t)
	_, err := w.store.RequestKill(context.Background(), []string{r.ID()})
	must(t, err)
	must(t, w.agent(cfg, nil).Run(context.Background()))

	if got := w.get(r.ID()); got.State != state.StateKilled {
		t.Errorf("after the kill: %s, want killed", got.State)
	}
	if got, err := os.ReadFile(w.dstPath(r)); err != nil || string(got) != string(theirs) {
		t.Errorf("the file at the destination was changed or deleted by a kill before the transfer ran: %q, %v", got, err)
	}
}

// laggingQueue is a store whose queue listings (the claim and List by
// anything but IDs) show nothing for lag after a lost job sent a transfer
// back to the queue, as a CouchDB cluster's views may; its reads by ID
// (the agent's drain check of its own transfers) fail unreadable times.
type laggingQueue struct {
	agent.Store
	w     *world
	lag   time.Duration
	mu    sync.Mutex
	until time.Time // the listings show nothing before this
	// unreadable is how many reads by ID fail before one succeeds
	unreadable int
}

func (s *laggingQueue) lagging() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.clk.Now().Before(s.until)
}

func (s *laggingQueue) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	if s.lagging() {
		return state.Claimed{Transfers: []state.Transfer{}}, nil
	}
	return s.Store.NewTransfers(ctx, r)
}

func (s *laggingQueue) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	if len(f.IDs) > 0 {
		s.mu.Lock()
		fail := s.unreadable > 0
		if fail {
			s.unreadable--
		}
		s.mu.Unlock()
		if fail {
			return nil, errors.New("read timed out (test)")
		}
		return s.Store.List(ctx, f)
	}
	if s.lagging() {
		return []state.Transfer{}, nil
	}
	return s.Store.List(ctx, f)
}

func (s *laggingQueue) SetTerminalState(ctx context.Context, outs []state.Terminal) ([]state.Result, error) {
	res, err := s.Store.SetTerminalState(ctx, outs)
	for _, o := range outs {
		if o.Outcome == state.OutcomeLost {
			s.mu.Lock()
			s.until = s.w.clk.Now().Add(s.lag)
			s.mu.Unlock()
		}
	}
	return res, err
}

// losesFirstJob is an FTS that loses the first job submitted to it.
type losesFirstJob struct {
	agent.FTS
	sim  *ftstest.Server
	once sync.Once
}

func (f *losesFirstJob) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	id, err := f.FTS.Submit(ctx, sub)
	if err == nil {
		f.once.Do(func() { f.sim.LoseJob(id) })
	}
	return id, err
}

// TestAgent_WaitsForItsLostTransferBehindALaggingView: FTS loses a job, so
// its transfer goes back to the queue at once (no cool-off), but the
// queue's view does not show it for 90 s. The agent, which claimed it and
// reads its own transfers by ID before it exits, waits for the view
// instead of exiting "drained" with the transfer left new.
// The agent also does not exit when it cannot read them at that moment.
func TestAgent_WaitsForItsLostTransferBehindALaggingView(t *testing.T) {
	for _, unreadable := range []int{0, 1} {
		w := newWorld(t, ftstest.Options{})
		r, _ := w.request("lagging", 0, true)
		w.enqueue([]state.Request{r})
		s := &laggingQueue{Store: w.open("agent-1"), w: w, lag: 90 * time.Second, unreadable: unreadable}
		a, err := agent.New(w.config("agent-1"), s, &losesFirstJob{FTS: w.client, sim: w.sim}, w.sites, w.deleter, w.log)
		must(t, err)
		must(t, a.Run(context.Background()))
		got := w.get(r.ID())
		if got.State != state.StateDone || got.Attempts != 1 {
			t.Errorf("%d failed reads: transfer is %s after %d attempts (%q), want done after the lost job's attempt", unreadable, got.State, got.Attempts, got.Reason)
		}
		if n := len(w.sim.Files()); n != 2 {
			t.Errorf("%d failed reads: %d files submitted, want 2: the lost job's and the retry's", unreadable, n)
		}
	}
}

// losesCancelAnswers is an FTS whose cancellations are applied but whose
// answers are lost: the agent sees an error and finds the files CANCELED
// on its next status query.
type losesCancelAnswers struct{ agent.FTS }

func (f losesCancelAnswers) CancelFiles(ctx context.Context, job string, ids []int64) ([]string, error) {
	if _, err := f.FTS.CancelFiles(ctx, job, ids); err != nil {
		return nil, err
	}
	return nil, errors.New("connection reset by peer (test: the answer was lost)")
}

// TestAgent_KillBeforeStartLostAnswerLeavesTheDestinationAlone: the cancel
// of a transfer still queued in FTS is applied but its answer is lost; the
// next status query shows the file CANCELED. url-copy never ran for it
// (FTS gives it no start_time), so the file at its destination (here
// somebody else's) is not its doing and must stay.
func TestAgent_KillBeforeStartLostAnswerLeavesTheDestinationAlone(t *testing.T) {
	w, r, cfg, theirs := queuedOverTheirs(t)
	_, err := w.store.RequestKill(context.Background(), []string{r.ID()})
	must(t, err)
	cfg.Once = false
	a, err := agent.New(cfg, w.open(cfg.Owner), losesCancelAnswers{w.client}, w.sites, w.deleter, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))

	if got := w.get(r.ID()); got.State != state.StateKilled {
		t.Errorf("after the kill: %s (%q), want killed", got.State, got.Reason)
	}
	if got, err := os.ReadFile(w.dstPath(r)); err != nil || string(got) != string(theirs) {
		t.Errorf("the file at the destination was changed or deleted by a kill before the transfer ran: %q, %v", got, err)
	}
}

// TestAgent_ExitsWhenItCannotConfirmForLong: an agent whose queue looks
// empty but whose own transfers (one sent back by a lost job, behind a
// view that lags for an hour) cannot be read looks again a few passes,
// then exits instead of waiting forever.
func TestAgent_ExitsWhenItCannotConfirmForLong(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("lagging", 0, true)
	w.enqueue([]state.Request{r})
	s := &laggingQueue{Store: w.open("agent-1"), w: w, lag: time.Hour, unreadable: 100}
	a, err := agent.New(w.config("agent-1"), s, &losesFirstJob{FTS: w.client, sim: w.sim}, w.sites, w.deleter, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	if tried := 100 - s.unreadable; tried != 4 {
		t.Errorf("the agent tried to read its own transfers %d times before it exited, want 4", tried)
	}
}

// TestAgent_CancelledInFTSWhileQueuedLeavesTheDestinationAlone: a file
// cancelled in FTS, not by aso, while still queued never had url-copy run
// for it, so the file at its destination (here somebody else's) stays.
func TestAgent_CancelledInFTSWhileQueuedLeavesTheDestinationAlone(t *testing.T) {
	w, r, cfg, theirs := queuedOverTheirs(t)
	files := w.sim.Files()
	if len(files) != 1 {
		t.Fatalf("%d files submitted, want 1", len(files))
	}
	// somebody else cancels the whole job in FTS (DELETE /jobs/ID)
	req, err := http.NewRequest(http.MethodDelete, w.sim.URL+"/jobs/"+files[0].JobID, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer token-for-tests")
	resp, err := w.sim.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel of job %s: %s", files[0].JobID, resp.Status)
	}
	must(t, w.agent(cfg, nil).Run(context.Background()))
	if got := w.get(r.ID()); got.State != state.StateFailed || got.ErrorClass != "canceled" {
		t.Errorf("after the cancel: %s %s (%q), want failed, canceled", got.State, got.ErrorClass, got.Reason)
	}
	if got, err := os.ReadFile(w.dstPath(r)); err != nil || string(got) != string(theirs) {
		t.Errorf("the file at the destination was deleted after a cancel before the transfer ran: %q, %v", got, err)
	}
}

// refusesFirstJob refuses the first submission as FTS does for a banned
// storage element (403, not a credential problem), then accepts.
type refusesFirstJob struct {
	agent.FTS
	once sync.Once
}

func (f *refusesFirstJob) Submit(ctx context.Context, s fts.Submission) (string, error) {
	refused := false
	f.once.Do(func() { refused = true })
	if refused {
		return "", &fts.HTTPError{StatusCode: http.StatusForbidden, Message: "T1_XX_Home is banned"}
	}
	return f.FTS.Submit(ctx, s)
}

// losesFirstAbortAnswer writes the first abort but loses its answer.
type losesFirstAbortAnswer struct {
	agent.Store
	once sync.Once
}

func (s *losesFirstAbortAnswer) AbortTransfers(ctx context.Context, ab []state.Abort) ([]state.Result, error) {
	res, err := s.Store.AbortTransfers(ctx, ab)
	lost := false
	s.once.Do(func() { lost = err == nil })
	if lost {
		return nil, errors.New("context deadline exceeded (test: the answer was lost)")
	}
	return res, err
}

// TestAgent_LostAbortAnswerSendsNothingStale: FTS refuses a job (a banned
// storage element), the abort that sends its transfer back with a penalty
// is written but its answer lost. The agent must not act on its copy of the
// transfer, which still carries the refused job's sid: looked up (FTS never
// saw it) and sent again, it would run as a job the store does not know,
// and the transfer would be submitted once more after its cool-off.
func TestAgent_LostAbortAnswerSendsNothingStale(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("banned", 0, true)
	w.enqueue([]state.Request{r})
	a, err := agent.New(w.config("agent-1"), &losesFirstAbortAnswer{Store: w.open("agent-1")}, &refusesFirstJob{FTS: w.client}, w.sites, w.deleter, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateDone || got.Attempts != 1 || len(w.sim.Files()) != 1 {
		t.Errorf("transfer %s after %d attempts (%q), %d FTS submissions; want done after the refused attempt, submitted once",
			got.State, got.Attempts, got.Reason, len(w.sim.Files()))
	}
}

// goneFTS stands for an FTS server that ended with every job it held, as
// the in-process simulator of a run that has exited does (cmd's
// goneLocal): each job is lost and gone.
type goneFTS struct{}

var errGone = errors.New("the in-process FTS simulator of an earlier run ended with it (test)")

func (goneFTS) VO(context.Context) (string, error) { return "local", nil }

func (goneFTS) Submit(context.Context, fts.Submission) (string, error) { return "", errGone }

func (goneFTS) Status(_ context.Context, ids []string) ([]fts.JobStatus, error) {
	out := make([]fts.JobStatus, len(ids))
	for i, id := range ids {
		out[i] = fts.JobStatus{JobID: id, Lost: true, Gone: true, Reason: errGone.Error()}
	}
	return out, nil
}

func (goneFTS) CancelFiles(context.Context, string, []int64) ([]string, error) { return nil, errGone }

// answersFirstSubmit passes the first submission on and loses every
// other on its way (its outcome unknown: FTS never saw it).
type answersFirstSubmit struct {
	agent.FTS
	n atomic.Int32
}

func (f *answersFirstSubmit) Submit(ctx context.Context, s fts.Submission) (string, error) {
	if f.n.Add(1) > 1 {
		return "", context.DeadlineExceeded
	}
	return f.FTS.Submit(ctx, s)
}

// TestAgent_JobsGoneWithTheirFTSChargeNothing: a run on an FTS that ended
// with it (the in-process simulator of a stopped run) left one job
// submitted and one whose submission's outcome is unknown (its sid
// written). The next run, on an FTS of its own, finds both gone with
// their FTS: their transfers go back to the queue without an attempt
// counted, counted as released, and are sent to its FTS, and all end done
// at their first attempt.
func TestAgent_JobsGoneWithTheirFTSChargeNothing(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(10)
	first := ftstest.NewServer(t, ftstest.Options{Now: w.clk.Now, LocalFiles: true, Tokens: []string{"token-for-tests"}, QueueDelay: time.Hour})
	client, err := fts.New(fts.Config{Endpoint: first.URL, TokenFile: filepath.Join(w.dir, "token"), Timeout: 5 * time.Second, MaxElapsed: 10 * time.Second})
	must(t, err)
	cfg := w.config("agent-1")
	cfg.Once, cfg.MaxFilesPerJob, cfg.FTSEndpoint = true, 5, "local:first"
	a, err := agent.New(cfg, w.open("agent-1"), &answersFirstSubmit{FTS: client}, w.sites, w.deleter, w.log)
	must(t, err)
	must(t, a.Run(context.Background()))
	byState := map[state.State]int{}
	for _, r := range reqs {
		byState[w.get(r.ID()).State]++
	}
	if byState[state.StateSubmitted] != 5 || byState[state.StateAcquired] != 5 {
		t.Fatalf("after the first run: %v, want 5 submitted and 5 acquired with their sid", byState)
	}

	w.clk.Advance(16 * time.Minute) // the first run's leases expire
	cfg = w.config("agent-2")
	cfg.FTSEndpoint = "local:second"
	cfg.OpenFTS = func(_ context.Context, ep string) (agent.FTS, error) {
		if ep != "local:first" {
			t.Errorf("asked to open FTS endpoint %q", ep)
		}
		return goneFTS{}, nil
	}
	var total agent.PassStats
	b := w.agent(cfg, nil)
	b.OnPass = func(ps agent.PassStats) { total.Add(ps) }
	must(t, b.Run(context.Background()))
	for _, r := range reqs {
		got := w.get(r.ID())
		if got.State != state.StateDone || got.Attempts != 0 || got.FTSEndpoint != "local:second" {
			t.Errorf("%s: %s after %d attempts on %q (%q), want done on local:second without an attempt charged",
				got.ID, got.State, got.Attempts, got.FTSEndpoint, got.Reason)
		}
		if !hasHistory(got, "was lost: "+errGone.Error()) {
			t.Errorf("%s: no history entry says its job was lost with its FTS: %+v", got.ID, got.History)
		}
	}
	if total.Released != 10 || total.Lost != 0 || total.Retried != 0 || total.Done != 10 {
		t.Errorf("second run: released %d, lost %d, retried %d, done %d; want 10, 0, 0, 10", total.Released, total.Lost, total.Retried, total.Done)
	}
}
