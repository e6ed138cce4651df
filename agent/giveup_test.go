package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_GivesUpWithoutProgress: once FTS fails every request (its
// database down) after the run submitted its transfers, every pass has
// errors and changes nothing; after GiveUpAfter of such passes the run
// ends with ErrNoProgress, leaving the transfers submitted for the next
// run. An outage shorter than that is ridden out: the run drains.
func TestAgent_GivesUpWithoutProgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		downFor  int // passes after the first with FTS down; -1: to the end
		wantGive bool
	}{
		{"outage to the end", -1, true},
		{"outage of three passes", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, ftstest.Options{TransferTime: 2 * time.Minute})
			// the client gives up on a failing FTS at once, as the run's
			// phase timeout would on a real one
			var err error
			w.client, err = fts.New(fts.Config{Endpoint: w.sim.URL, TokenFile: filepath.Join(w.dir, "token"),
				Timeout: time.Second, MaxElapsed: 20 * time.Millisecond})
			must(t, err)
			var reqs []state.Request
			for i := range 5 {
				r, _ := w.request("give-up", i, true)
				reqs = append(reqs, r)
			}
			w.enqueue(reqs)
			cfg := w.config("agent-1")
			cfg.GiveUpAfter = 5 * cfg.Interval
			a := w.agent(cfg, nil)
			passes := 0
			a.OnPass = func(ps agent.PassStats) {
				passes = ps.Pass
				switch {
				case ps.Pass == 1:
					w.sim.SetDatabaseDown(true)
				case tc.downFor >= 0 && ps.Pass == 1+tc.downFor:
					w.sim.SetDatabaseDown(false)
				}
			}
			err = a.Run(context.Background())
			if !tc.wantGive {
				must(t, err)
				for _, r := range reqs {
					if tr := w.get(r.ID()); tr.State != state.StateDone {
						t.Errorf("%s: %s %q after an outage of %d passes, want done", tr.ID, tr.State, tr.Reason, tc.downFor)
					}
				}
				return
			}
			if !errors.Is(err, agent.ErrNoProgress) {
				t.Fatalf("Run = %v after %d passes, want ErrNoProgress", err, passes)
			}
			if passes < 6 || passes > 8 {
				t.Errorf("gave up after %d passes, want 6 or 7: the first, then %s of failing ones", passes, cfg.GiveUpAfter)
			}
			for _, r := range reqs {
				if tr := w.get(r.ID()); tr.State != state.StateSubmitted {
					t.Errorf("%s: %s %q, want still submitted, for the next run", tr.ID, tr.State, tr.Reason)
				}
			}
		})
	}
}
