package memfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

var ctx = context.Background()

type warnings struct{ msgs []string }

func (w *warnings) add(m string) { w.msgs = append(w.msgs, m) }

func open(t testing.TB, path string, o memfile.Options) *memfile.Store {
	t.Helper()
	s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-a"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func enqueue(t testing.TB, s *memfile.Store, from, n int) []string {
	t.Helper()
	reqs := make([]state.Request, n)
	for i := range reqs {
		reqs[i] = statetest.Req(statetest.Alice, from+i)
	}
	res, err := s.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range res {
		if r.Status != state.Stored {
			t.Fatalf("enqueue %d: %s %v", i, r.Status, r.Err)
		}
		ids[i] = r.ID
	}
	return ids
}

func size(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestOpen_CreatesFileAndDirectories(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "state.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 3)
	s.Close()
	s = open(t, path, memfile.Options{})
	for _, id := range ids {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("after reopen: %v", err)
		}
	}
	if _, err := s.Get(ctx, "x"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Get of an unknown ID: %v", err)
	}
}

// TestOpen_TornLastRecord cuts the last record at every kind of place and
// checks it is dropped with a warning while everything before it stays.
func TestOpen_TornLastRecord(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.aso")
	s := open(t, base, memfile.Options{})
	kept := enqueue(t, s, 0, 2)
	good := size(t, base)
	lost := enqueue(t, s, 10, 2)
	full := size(t, base)
	s.Close()
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := good + int64(bytes.IndexByte(orig[good:], '\n')) + 1
	for _, cut := range []int64{good + 5, headerEnd - 1, headerEnd, headerEnd + 40, full - 1} {
		t.Run(fmt.Sprint(cut-good), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			if err := os.WriteFile(path, orig[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			var w warnings
			s := open(t, path, memfile.Options{Warn: w.add})
			if len(w.msgs) != 1 || !strings.Contains(w.msgs[0], "torn") || !strings.Contains(w.msgs[0], path) {
				t.Fatalf("warnings %q, want one about the torn record in %s", w.msgs, path)
			}
			if got := size(t, path); got != good {
				t.Fatalf("file is %d bytes after dropping the torn record, want %d", got, good)
			}
			for _, id := range kept {
				if _, err := s.Get(ctx, id); err != nil {
					t.Fatalf("record before the torn one: %v", err)
				}
			}
			if _, err := s.Get(ctx, lost[0]); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("torn record applied: %v", err)
			}
			enqueue(t, s, 20, 1)
			s.Close()
			w.msgs = nil
			open(t, path, memfile.Options{Warn: w.add}) // reopening must not warn again
			if len(w.msgs) != 0 {
				t.Fatalf("warnings after repair: %q", w.msgs)
			}
		})
	}
	t.Run("checksum", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.aso")
		bad := bytes.Clone(orig)
		bad[full-10] ^= 0x01
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		var w warnings
		s := open(t, path, memfile.Options{Warn: w.add})
		if len(w.msgs) != 1 || size(t, path) != good {
			t.Fatalf("warnings %q, size %d; want the damaged last record dropped", w.msgs, size(t, path))
		}
		if _, err := s.Get(ctx, lost[1]); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("damaged record applied: %v", err)
		}
	})
}

// TestOpen_Corruption checks that damage other than a torn last record is a
// clear error naming the file and line, and that the file is left alone.
func TestOpen_Corruption(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.aso")
	s := open(t, base, memfile.Options{})
	enqueue(t, s, 0, 2)
	second := size(t, base) // the second record starts here, at line 5
	enqueue(t, s, 10, 2)
	enqueue(t, s, 20, 2)
	s.Close()
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	flip := bytes.Clone(orig)
	flip[second+100] ^= 0x01
	garbage := append(bytes.Clone(orig[:second]), append([]byte("this is not json\n"), orig[second:]...)...)
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"checksum of a middle record", ":5 ", flip},
		{"garbage line", ":5 ", garbage},
		{"not a state file", ":1:", []byte("hello\nworld\n")},
		{"document without _id", ":2 ", []byte(`{"aso_memfile":1}` + "\n" + `{"type":"transfer"}` + "\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := memfile.Open(path, state.Config{})
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("Open: %v; want an error naming %s%s", err, path, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, c.data) {
				t.Fatalf("a failed Open changed the file")
			}
		})
	}
}

func docLine(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestInvalidDocuments: hand-edited documents that are not valid transfers
// are skipped by every call, reported by Summary, and kept by compaction.
func TestInvalidDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	now := statetest.Start
	good := state.NewTransfer(statetest.Req(statetest.Alice, 1), now, "hand")
	good.Rev = "1-a"
	badState := state.NewTransfer(statetest.Req(statetest.Alice, 2), now, "hand")
	badState.State = "bogus"
	badID := state.NewTransfer(statetest.Req(statetest.Alice, 3), now, "hand")
	badID.ID = statetest.ReqID(statetest.Alice, 4)
	wrongType := `{"_id":"` + statetest.ReqID(statetest.Alice, 5) + `","type":"transfer","size":"big"}` + "\n"
	data := `{"aso_memfile":1}` + "\n" + docLine(t, good) + docLine(t, badState) + docLine(t, badID) + wrongType
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := statetest.NewClock(now)
	cfg := state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-a"}, Now: clock.Now}
	s, err := memfile.Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(s *memfile.Store) {
		t.Helper()
		sum, err := s.Summary(ctx, state.SummaryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Total != 1 || len(sum.Invalid) != 3 {
			t.Fatalf("summary total %d invalid %+v; want 1 valid and 3 invalid", sum.Total, sum.Invalid)
		}
		reasons := map[string]string{}
		for _, inv := range sum.Invalid {
			reasons[inv.ID] = inv.Reason
		}
		for id, want := range map[string]string{badState.ID: "state", badID.ID: "_id", statetest.ReqID(statetest.Alice, 5): "decode"} {
			if !strings.Contains(reasons[id], want) {
				t.Fatalf("reason for %s is %q, want it to mention %s", id, reasons[id], want)
			}
		}
		ls, err := s.List(ctx, state.Filter{})
		if err != nil || len(ls) != 1 || ls[0].ID != good.ID {
			t.Fatalf("List: %v %v", ls, err)
		}
		if _, err := s.Get(ctx, badState.ID); !errors.Is(err, state.ErrNotFound) || !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("Get of an invalid document: %v", err)
		}
		res, err := s.RequestKill(ctx, []string{badState.ID})
		if err != nil || !errors.Is(res[0].Err, state.ErrNotFound) {
			t.Fatalf("RequestKill of an invalid document: %+v %v", res, err)
		}
	}
	check(s)
	r := statetest.Req(statetest.Alice, 2)
	if res, err := s.Enqueue(ctx, []state.Request{r}); err != nil || res[0].Status != state.AlreadyQueued {
		t.Fatalf("Enqueue over an invalid document: %+v %v (it must not be overwritten)", res, err)
	}
	if got, err := s.NewTransfers(ctx, 10); err != nil || len(got) != 1 || got[0].ID != good.ID {
		t.Fatalf("NewTransfers: %v %v", got, err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := memfile.Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	check(s2)
}

// TestHandles_CatchUpAndCompaction: handles on one file see each other's
// writes, also across compactions that replace the file.
func TestHandles_CatchUpAndCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	o := memfile.Options{CompactBytes: 1} // compact whenever the journal outgrows the snapshot
	a, b := open(t, path, o), open(t, path, o)
	var all []string
	for i := 0; i < 20; i++ {
		w := a
		if i%2 == 1 {
			w = b
		}
		all = append(all, enqueue(t, w, i*3, 3)...)
		for _, r := range []*memfile.Store{a, b} {
			ls, err := r.List(ctx, state.Filter{})
			if err != nil || len(ls) != len(all) {
				t.Fatalf("round %d: listed %d, %v; want %d", i, len(ls), err, len(all))
			}
		}
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.Compactions == 0 || sb.Compactions == 0 || sa.Reloads == 0 || sb.Reloads == 0 {
		t.Fatalf("stats a %+v b %+v; want compactions and reloads on both", sa, sb)
	}
	if sa.Fsyncs != 10 || sa.JournalRecords != 10 {
		t.Fatalf("stats a %+v; want 10 fsynced records", sa)
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) != 0 {
		t.Fatalf("files left behind: %v", left)
	}
}

// TestCommitCost: a commit appends a record the size of its batch, whatever
// the size of the queue; transient writes are not fsynced.
func TestCommitCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	enqueue(t, s, 0, 2000)
	ts, err := s.NewTransfers(ctx, 1)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	before, st := size(t, path), s.Stats()
	res, err := s.SetTransferID(ctx, []state.Commit{{Transfer: ts[0], DestPFN: "file:///x"}}, "job-1")
	if err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	if grew := size(t, path) - before; grew > 4096 {
		t.Fatalf("committing one transfer of 2000 appended %d bytes", grew)
	}
	if got := s.Stats(); got.Fsyncs != st.Fsyncs+1 || got.JournalRecords != st.JournalRecords+1 {
		t.Fatalf("stats %+v after %+v: want one fsynced record", got, st)
	}
	ts[0].Rev = res[0].Rev
	st = s.Stats()
	if res, err := s.SetTransientState(ctx, []state.Transient{{Transfer: ts[0], Progress: state.Progress{FTSState: "ACTIVE"}}}); err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	if got := s.Stats(); got.Fsyncs != st.Fsyncs || got.JournalRecords != st.JournalRecords+1 {
		t.Fatalf("stats %+v after %+v: want one record and no fsync", got, st)
	}
}
