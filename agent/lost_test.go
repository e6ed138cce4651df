package agent_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
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
