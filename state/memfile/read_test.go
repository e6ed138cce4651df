package memfile_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestStagedWritesVisible: within one call, an item sees what an earlier
// item of the same call wrote, although it is not in the file yet.
func TestStagedWritesVisible(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.aso"), memfile.Options{})
	r := statetest.Req(statetest.Alice, 1)
	res, err := s.Enqueue(ctx, []state.Request{r, r})
	if err != nil || res[0].Status != state.Stored || res[1].Status != state.AlreadyQueued {
		t.Fatalf("one request twice in a call: %+v, %v; want stored, then already queued", res, err)
	}
	ts, err := statetest.Claim(ctx, s, 5)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	cres, err := statetest.Commit(ctx, s, []state.Commit{{Transfer: ts[0], DestPFN: "file:///d"}}, "job-1")
	must(t, cres, err)
	done := state.Terminal{Transfer: ts[0], Outcome: state.OutcomeDone, FTSJob: "job-1"}
	tres, err := s.SetTerminalState(ctx, []state.Terminal{done, done})
	must(t, tres, err)
	got, err := s.Get(ctx, ts[0].ID)
	if err != nil || got.State != state.StateDone || tres[1].Rev != tres[0].Rev || got.Rev != tres[0].Rev {
		t.Fatalf("one outcome twice: results %+v, stored %s rev %s; want one write, the second item seeing it", tres, got.State, got.Rev)
	}
	id := enqueue(t, s, 2, 1)[0]
	kres, err := s.RequestKill(ctx, []string{id, id})
	if err != nil || kres[0].Err != nil || !errors.Is(kres[1].Err, state.ErrTerminal) {
		t.Fatalf("kill of a new transfer twice in a call: %+v, %v; want killed, then ErrTerminal", kres, err)
	}
}

// TestReadBack_ManyAndLarge: transfers are read back from the file in
// coalesced reads of at most 1 MiB, and a document larger than that is read
// whole, also after a reopen and a compaction.
func TestReadBack_ManyAndLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 3000) // about 2.5 MiB of documents
	ts, err := statetest.Claim(ctx, s, 1)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	huge := strings.Repeat("no such file or directory; ", 80_000) // 2 MiB
	res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: huge}})
	must(t, res, err)
	check := func(s *memfile.Store, when string) {
		t.Helper()
		ls, err := s.List(ctx, state.Filter{User: statetest.Alice})
		if err != nil || len(ls) != len(ids) {
			t.Fatalf("%s: listed %d transfers, %v; want %d", when, len(ls), err, len(ids))
		}
		seen := map[string]bool{}
		for _, tr := range ls {
			seen[tr.ID] = true
			if tr.ID == ts[0].ID && tr.Reason != huge {
				t.Fatalf("%s: the large document read back with a reason of %d bytes, want %d", when, len(tr.Reason), len(huge))
			}
		}
		for i, id := range ids {
			if !seen[id] {
				t.Fatalf("%s: transfer %d (%s) missing from the list", when, i, id)
			}
		}
		if got, err := s.Get(ctx, ts[0].ID); err != nil || got.Reason != huge {
			t.Fatalf("%s: Get of the large document: reason of %d bytes, %v", when, len(got.Reason), err)
		}
	}
	check(s, "written")
	check(open(t, path, memfile.Options{}), "reopened")
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check(s, "compacted")
	check(open(t, path, memfile.Options{}), "reopened after compaction")
}
