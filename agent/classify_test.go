package agent_test

import (
	"context"
	"os"
	"testing"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_FailureClasses runs transfers that FTS fails with one real
// reason each time and checks what the class decides: a missing source
// (the davs 404, classified by its errno and status, not by its text)
// fails at the first attempt and the file at its destination, which no
// attempt of it began writing, is left in place; a queue
// expiry is retried until the attempts run out and the file at the
// destination, which the transfer never wrote, is left alone; a reason no
// class explains follows the file's recoverable flag. The class is
// stored with the reason, counted in the summary and in the failure metric.
func TestAgent_FailureClasses(t *testing.T) {
	for _, tc := range []struct {
		reason, class string
		attempts      int
		deleted       bool
	}{
		// a failure on the source side shows nothing written: the file
		// at the destination is left in place
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", "source_missing", 1, false},
		{"Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)", "queue_expired", 3, false},
		// no class explains it: FTS's recoverable flag (false for this
		// text) decides, where the errno alone would have retried
		{"TRANSFER [5] System error in write into HDFS", "unknown", 1, true},
	} {
		t.Run(tc.class, func(t *testing.T) {
			w := newWorld(t, ftstest.Options{Seed: 3, FailureRate: 1, FailureReasons: []string{tc.reason}})
			var reqs []state.Request
			for i := 0; i < 3; i++ {
				r, _ := w.request(tc.class, i, true)
				w.writeFile(w.dstPath(r), []byte("left at the destination"))
				reqs = append(reqs, r)
			}
			w.enqueue(reqs)
			cfg := w.config("agent-1")
			cfg.Overwrite = true // FTS may write over the file: the class decides whether it is deleted
			a := w.agent(cfg, nil)
			if err := a.Run(context.Background()); err != nil {
				t.Fatalf("Run: %v", err)
			}
			for _, r := range reqs {
				tr := w.get(r.ID())
				if tr.State != state.StateFailed || tr.ErrorClass != tc.class || tr.Attempts != tc.attempts {
					t.Errorf("%s: %s class %q after %d attempts (%q), want failed %s after %d",
						tr.ID, tr.State, tr.ErrorClass, tr.Attempts, tr.Reason, tc.class, tc.attempts)
				}
				_, err := os.Stat(w.dstPath(r))
				if deleted := os.IsNotExist(err); deleted != tc.deleted {
					t.Errorf("%s: destination deleted %v, want %v (%v)", tr.ID, deleted, tc.deleted, err)
				}
			}
			sum, err := w.store.Summary(context.Background(), state.SummaryOptions{})
			must(t, err)
			if got := sum.ByErrorClass[tc.class]; got != 3 || len(sum.ByErrorClass) != 1 {
				t.Errorf("summary by error class %v, want %s: 3", sum.ByErrorClass, tc.class)
			}
			if failed := failuresOf(t, a.Metrics(), "failed", tc.class); failed != 3 {
				t.Errorf("aso_transfer_failures_total{outcome=failed,error_class=%s} = %v, want 3", tc.class, failed)
			}
		})
	}
}

// failuresOf reads aso_transfer_failures_total{outcome, error_class}.
func failuresOf(t *testing.T, m *agent.Metrics, outcome, class string) float64 {
	t.Helper()
	return counterOf(t, m, "aso_transfer_failures_total", map[string]string{"outcome": outcome, "error_class": class})
}
