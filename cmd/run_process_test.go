package cmd_test

import (
	"os"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMain stops the CouchDB test server and removes the aso binary of the
// process tests at the end.
func TestMain(m *testing.M) {
	code := couchtest.Main(m)
	proctest.Cleanup()
	os.Exit(code)
}

// fastSim is a simulator whose files live about half a second.
func fastSim(seed int64) ftstest.Options {
	return ftstest.Options{
		Seed: seed, QueueDelay: 150 * time.Millisecond, StartDelay: 50 * time.Millisecond, TransferTime: 250 * time.Millisecond,
		FailureRate: 0.1, FailureReasons: []string{"TRANSFER [110] Connection timed out"},
	}
}

// TestRunProcess_Drains is the baseline of the process tests: one
// uninterrupted agent drains a mixed queue and every invariant holds.
func TestRunProcess_Drains(t *testing.T) {
	w := proctest.New(t, proctest.Options{Sim: fastSim(3), Seed: 3})
	w.AddMix("alice", 60)
	p := w.RunToEnd("alice", time.Minute, "--max-files-per-job", "10")
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%s in %s", r, p.Runtime().Round(time.Millisecond))
	r.Require(t)
	if r.Done == 0 || r.Failed == 0 {
		t.Errorf("want some done and some failed transfers: %s", r)
	}
	_ = cmd.ExitLocked
}
