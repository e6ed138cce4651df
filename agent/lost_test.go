package agent_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_LostJobLeavesTheDestinationAlone: FTS loses a job before it
// ran. The agent cannot know whether anything at the destination was
// written by that job (here it is somebody else's file, which FTS would
// have refused to overwrite), so it must not delete it: the transfer goes
// back to the queue and the file stays.
func TestAgent_LostJobLeavesTheDestinationAlone(t *testing.T) {
	w := newWorld(t, ftstest.Options{QueueDelay: time.Hour})
	r, _ := w.request("taken", 0, true)
	theirs := []byte("somebody else's file")
	w.writeFile(w.dstPath(r), theirs)
	w.enqueue([]state.Request{r})

	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
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
