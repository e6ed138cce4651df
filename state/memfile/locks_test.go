package memfile_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// TestLockRecordSurvivesCompaction: the since and last_run of a lock
// document are kept by a compaction and read back by a new handle.
func TestLockRecordSurvivesCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	ctx := context.Background()
	s, err := memfile.Open(path, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.AcquireLock(ctx, "alice", "h:1:x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	run := state.RunRecord{Holder: "h:1:x", Started: state.At(l.Since), Ended: state.At(time.Now()), ExitCode: 4, Error: "e"}
	if err := s.ReleaseLock(ctx, l, &run); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := memfile.Open(path, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ls, err := r.Locks(ctx, "")
	if err != nil || len(ls) != 1 {
		t.Fatalf("Locks: %+v, %v", ls, err)
	}
	if got := ls[0]; got.LastRun == nil || *got.LastRun != run || !got.Since.Equal(l.Since) || !got.Expire.IsZero() {
		t.Fatalf("lock read back after compaction: %+v (last run %+v), want since %s and last run %+v", got, got.LastRun, l.Since, run)
	}
}
