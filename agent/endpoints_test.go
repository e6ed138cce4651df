package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// secondSim starts another FTS simulator on the world's clock and files,
// with the world's token, and returns it with its client.
func (w *world) secondSim(opts ftstest.Options) (*ftstest.Server, *fts.Client) {
	w.t.Helper()
	opts.Now, opts.LocalFiles, opts.Tokens = w.clk.Now, true, []string{"token-for-tests"}
	sim := ftstest.NewServer(w.t, opts)
	c, err := fts.New(fts.Config{Endpoint: sim.URL, TokenFile: filepath.Join(w.dir, "token"), Timeout: 5 * time.Second, MaxElapsed: 10 * time.Second})
	must(w.t, err)
	return sim, c
}

// runSecond runs an agent to the end with server b as its own and the
// world's simulator reachable as an earlier endpoint; it returns the
// endpoints the agent opened.
func (w *world) runSecond(b *ftstest.Server, cb *fts.Client) []string {
	w.t.Helper()
	cfg := w.config("agent-2")
	cfg.FTSEndpoint = b.URL
	var opened []string
	cfg.OpenFTS = opener(&opened, map[string]*fts.Client{w.sim.URL: w.client})
	a, err := agent.New(cfg, w.open("agent-2"), cb, w.sites, w.deleter, w.log)
	must(w.t, err)
	if err := a.Run(context.Background()); err != nil {
		w.t.Fatalf("second run: %v", err)
	}
	return opened
}

// opener is Config.OpenFTS for the given clients, recording what it opened.
func opener(opened *[]string, clients map[string]*fts.Client) func(context.Context, string) (agent.FTS, error) {
	return func(_ context.Context, endpoint string) (agent.FTS, error) {
		*opened = append(*opened, endpoint)
		if c, ok := clients[endpoint]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("no server at %s", endpoint)
	}
}

// slowSim keeps jobs running long enough for a second run to find them.
var slowSim = ftstest.Options{QueueDelay: time.Minute, TransferTime: 10 * time.Minute}

// submitOnFirstEndpoint enqueues n requests and submits them in one pass
// to the world's simulator, recorded as the jobs' endpoint.
func (w *world) submitOnFirstEndpoint(n int) []state.Request {
	w.t.Helper()
	reqs := w.goodRequests(n)
	cfg := w.config("agent-1")
	cfg.Once, cfg.FTSEndpoint = true, w.sim.URL
	if err := w.agent(cfg, nil).Run(context.Background()); err != nil {
		w.t.Fatalf("first run: %v", err)
	}
	return reqs
}

// TestAgent_JobsStayWithTheirEndpoint: the first run submits to server A;
// the second runs with server B as --fts. The jobs on A are monitored on
// A to the end, never declared lost nor submitted again on B; only the
// transfers enqueued since go to B.
func TestAgent_JobsStayWithTheirEndpoint(t *testing.T) {
	w := newWorld(t, slowSim)
	first := w.submitOnFirstEndpoint(12)
	for _, r := range first {
		if tr := w.get(r.ID()); tr.State != state.StateSubmitted || tr.FTSEndpoint != w.sim.URL {
			t.Fatalf("%s after the first run: %s at %q, want submitted at %s", tr.ID, tr.State, tr.FTSEndpoint, w.sim.URL)
		}
	}

	// a kill requested between the runs is cancelled on A, where the job is
	kres, err := w.store.RequestKill(context.Background(), []string{first[0].ID()})
	must(t, err)
	must(t, kres[0].Err)

	simB, clientB := w.secondSim(slowSim)
	var second []state.Request
	for i := 0; i < 5; i++ {
		r, _ := w.request("second", i, true)
		second = append(second, r)
	}
	w.enqueue(second)
	opened := w.runSecond(simB, clientB)

	subA, subB := submissionsByTransfer(w.sim.Files()), submissionsByTransfer(simB.Files())
	if tr := w.get(first[0].ID()); tr.State != state.StateKilled || len(subA[tr.ID]) != 1 || subA[tr.ID][0].State != "CANCELED" {
		t.Errorf("killed %s: %s, on A %+v; want killed and cancelled on A", tr.ID, tr.State, subA[tr.ID])
	}
	if n := simB.Requests()["cancel_files"] + simB.Requests()["cancel"]; n != 0 {
		t.Errorf("%d cancel requests to B, want none", n)
	}
	for _, r := range first[1:] {
		tr := w.get(r.ID())
		if tr.State != state.StateDone || tr.Attempts != 0 || len(subA[r.ID()]) != 1 || len(subB[r.ID()]) != 0 {
			t.Errorf("%s: %s %q after %d attempts; submitted %d times to A, %d to B; want done, once, on A",
				tr.ID, tr.State, tr.Reason, tr.Attempts, len(subA[r.ID()]), len(subB[r.ID()]))
		}
	}
	for _, r := range second {
		tr := w.get(r.ID())
		if tr.State != state.StateDone || tr.FTSEndpoint != simB.URL || len(subA[r.ID()]) != 0 || len(subB[r.ID()]) != 1 {
			t.Errorf("%s: %s at %q; submitted %d times to A, %d to B; want done, once, on B",
				tr.ID, tr.State, tr.FTSEndpoint, len(subA[r.ID()]), len(subB[r.ID()]))
		}
		if got, err := os.ReadFile(w.dstPath(r)); err != nil || len(got) != int(r.Size) {
			t.Errorf("%s: destination %d bytes (%v), want %d", tr.ID, len(got), err, r.Size)
		}
	}
	if len(opened) != 1 || opened[0] != w.sim.URL {
		t.Errorf("opened endpoints %v, want A once", opened)
	}
}

// commitFails is a store whose commits fail: the run ends with its jobs
// submitted under their sids but not recorded, as after a crash.
type commitFails struct {
	agent.Store
}

var errCommit = errors.New("commit lost (test)")

func (commitFails) SetTransferIDs(context.Context, []state.CommitJob) ([][]state.Result, error) {
	return nil, errCommit
}

// TestAgent_AdoptsOnTheSidsEndpoint: jobs submitted to A whose commit was
// lost are found by their sid on A by the next run, which has B as --fts:
// adopted, never submitted to B.
func TestAgent_AdoptsOnTheSidsEndpoint(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.goodRequests(12)
	cfg := w.config("agent-1")
	cfg.Once, cfg.FTSEndpoint = true, w.sim.URL
	s := w.open("agent-1")
	if err := w.agent(cfg, commitFails{s}).Run(context.Background()); err != nil {
		t.Fatalf("first run: %v", err)
	}
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.SubmitSID == "" || tr.FTSEndpoint != w.sim.URL || tr.FTSJob != "" {
			t.Fatalf("%s after the lost commits: sid %q endpoint %q job %q, want a sid at %s and no job",
				tr.ID, tr.SubmitSID, tr.FTSEndpoint, tr.FTSJob, w.sim.URL)
		}
	}
	if n := len(w.sim.Files()); n != len(reqs) {
		t.Fatalf("%d files on A, want %d", n, len(reqs))
	}
	w.clk.Advance(16 * time.Minute) // the leases of the first run expire

	simB, clientB := w.secondSim(ftstest.Options{})
	opened := w.runSecond(simB, clientB)
	sub := submissionsByTransfer(w.sim.Files())
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateDone || len(sub[r.ID()]) != 1 {
			t.Errorf("%s: %s %q, submitted %d times to A; want done, once", tr.ID, tr.State, tr.Reason, len(sub[r.ID()]))
		}
	}
	if len(opened) != 1 {
		t.Errorf("opened endpoints %v, want A once", opened)
	}
	if n := simB.Requests()["submit"]; n != 0 {
		t.Errorf("%d submissions to B, want none: the sids were on A", n)
	}
}

// TestAgent_FencedOnEveryEndpoint: the write fence guards actions on an
// earlier endpoint as on the agent's own. Agent A, with B as --fts, reads
// the status of its jobs on the earlier endpoint and is frozen there for
// longer than its lock lives, while agent C takes the user over and
// cancels a killed transfer on that endpoint. When A wakes up it has lost
// its lock and sends that endpoint nothing: the transfer is cancelled once.
func TestAgent_FencedOnEveryEndpoint(t *testing.T) {
	w := newWorld(t, slowSim)
	first := w.submitOnFirstEndpoint(6)
	kres, err := w.store.RequestKill(context.Background(), []string{first[0].ID()})
	must(t, err)
	must(t, kres[0].Err)
	simB, clientB := w.secondSim(slowSim)
	ctx := context.Background()

	var frozen sync.RWMutex
	var cErr error
	var cancelsByC int
	earlier := &freezeAtStatus{FTS: w.client, freeze: func() {
		frozen.Lock()
		defer frozen.Unlock()
		w.clk.Advance(agent.DefaultLockTTL + time.Minute) // A's lock and leases expire
		before := w.sim.Requests()["cancel_files"] + w.sim.Requests()["cancel"]
		cfgC := w.config("agent-C")
		cfgC.FTSEndpoint = simB.URL
		var opened []string
		cfgC.OpenFTS = opener(&opened, map[string]*fts.Client{w.sim.URL: w.client})
		c, err := agent.New(cfgC, w.open("agent-C"), clientB, w.sites, w.deleter, w.log)
		must(t, err)
		cErr = c.Run(ctx)
		cancelsByC = w.sim.Requests()["cancel_files"] + w.sim.Requests()["cancel"] - before
	}}
	cfgA := w.config("agent-A")
	cfgA.FTSEndpoint = simB.URL
	cfgA.UpdateWindow = 24 * time.Hour // no progress to record: the cancel is A's first action after it wakes
	cfgA.OpenFTS = func(context.Context, string) (agent.FTS, error) { return earlier, nil }
	a, err := agent.New(cfgA, frozenStore{Store: w.open("agent-A"), frozen: &frozen}, clientB, w.sites, w.deleter, w.log)
	must(t, err)
	before := w.sim.Requests()["cancel_files"] + w.sim.Requests()["cancel"]
	errA := a.Run(ctx)
	if cErr != nil {
		t.Fatalf("the agent that took over: %v", cErr)
	}
	if !errors.Is(errA, state.ErrLockLost) {
		t.Errorf("the frozen agent returned %v, want the lost lock", errA)
	}
	if cancelsByC != 1 {
		t.Errorf("the agent that took over sent %d cancel requests to the earlier endpoint, want 1", cancelsByC)
	}
	if n := w.sim.Requests()["cancel_files"] + w.sim.Requests()["cancel"]; n-before != cancelsByC {
		t.Errorf("the earlier endpoint received %d cancel requests, %d of them from the agent that lost its lock", n-before, n-before-cancelsByC)
	}
	if tr := w.get(first[0].ID()); tr.State != state.StateKilled {
		t.Errorf("killed transfer is %s (%q), want killed", tr.State, tr.Reason)
	}
}
