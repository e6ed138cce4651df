package proctest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// TestCheck proves the checker finds what it must: it drains a queue with a
// real agent, sees no violation, then breaks each invariant by hand and
// sees each reported and counted.
func TestCheck(t *testing.T) {
	w := New(t, Options{Seed: 1, Sim: ftstest.Options{Seed: 1, QueueDelay: 50 * time.Millisecond, TransferTime: 50 * time.Millisecond}})
	es := w.AddMix("zoe", 40)
	p := w.RunToEnd("zoe", time.Minute)
	r := w.Check(CheckOptions{})
	if !r.OK() || r.Done != 36 || r.Failed != 4 || r.Transfers != 40 {
		t.Fatalf("after a clean run: %s\n%s\n%s", r, strings.Join(r.Violations, "\n"), p.Tail(20))
	}
	var done, exists, failed *Expected
	for _, e := range es {
		switch {
		case e.Kind == Good && done == nil:
			done = e
		case e.Kind == DestinationExists && exists == nil:
			exists = e
		case e.Kind == MissingSource && failed == nil:
			failed = e
		}
	}

	// a done transfer whose copy vanished, a pre-existing file overwritten
	must(t, os.Remove(w.DestPath(done)))
	must(t, os.WriteFile(w.DestPath(exists), []byte("overwritten"), 0o644))
	// the file at a failed transfer's destination that no attempt of it
	// wrote, changed (aso must leave it as it was)
	must(t, os.WriteFile(w.DestPath(failed), []byte("partial"), 0o644))
	// a transfer never stored
	w.remember(w.Generate("zoe", Good, 1)[0])
	// a transfer claimed by an agent that died long ago
	stuck := w.Generate("zoe", Good, 1)
	w.Enqueue(stuck)
	past, err := memfile.Open(strings.TrimPrefix(w.StateURL, "file:"), state.Config{
		Agent: state.Agent{User: "zoe", Owner: "dead:1:beef"}, Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	must(t, err)
	defer past.Close()
	if ts, err := statetest.Claim(context.Background(), past, 1); err != nil || len(ts) != 1 {
		t.Fatalf("claim: %v %d", err, len(ts))
	}
	// a second FTS submission of the done transfer
	c, err := fts.New(fts.Config{Endpoint: w.Sim.URL, TokenFile: w.TokenFile, Timeout: 10 * time.Second})
	must(t, err)
	again := func(e *Expected, suffix string) {
		_, err = c.Submit(context.Background(), fts.Submission{Files: []fts.SubmitFile{{
			Sources:      []string{"file://" + w.SourcePath(e)},
			Destinations: []string{"file://" + w.DestPath(e) + suffix},
			Metadata:     map[string]string{"transfer_id": e.ID()},
		}}})
		must(t, err)
	}
	again(done, ".again")
	// two at once of another: the second while the first is queued
	var other *Expected
	for _, e := range es {
		if e.Kind == Good && e != done {
			other = e
			break
		}
	}
	again(other, ".one")
	again(other, ".two")

	r = w.Check(CheckOptions{})
	t.Logf("%s", r)
	if r.Lost != 4 || r.Stuck != 1 || r.Duplicated != 2 {
		t.Errorf("want lost 4 (vanished copy, never stored, two done while FTS runs them again), stuck 1, duplicated 2: %s\n%s", r, strings.Join(r.Violations, "\n"))
	}
	for _, want := range []string{done.ID() + " (good): done, but the destination", exists.ID() + " (destination-exists): the file already at the destination was changed",
		failed.ID() + " (missing-source): the file no attempt of it wrote was changed or removed",
		"missing from the store", "lease expired", done.ID() + ": 2 FTS submissions but only 0 attempts", done.ID() + ": done in job", other.ID() + ": submitted in job"} {
		if !strings.Contains(strings.Join(r.Violations, "\n"), want) {
			t.Errorf("no violation says %q:\n%s", want, strings.Join(r.Violations, "\n"))
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
