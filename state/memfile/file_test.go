package memfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

var ctx = context.Background()

type warnings struct{ msgs []string }

func (w *warnings) add(m string) { w.msgs = append(w.msgs, m) }

// open opens the store at path with o, creating it when missing.
func open(t testing.TB, path string, o memfile.Options) *memfile.Store {
	t.Helper()
	o.Create = true
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

// TestOpen_TornLastRecord: what a crash during an append can leave at
// the end of the file (docs/guarantees.md) is dropped with a warning,
// while everything before it stays: the record cut short anywhere (ext4,
// XFS), and zeros (a file extended before its data reached the disk, as
// with delayed allocation): zeros after the last complete record, a
// record cut short and then zeros, a record whose last bytes are zeros.
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
	zeros := func(b []byte, n int) []byte { return append(bytes.Clone(b), make([]byte, n)...) }
	lastZeroed := bytes.Clone(orig)
	clear(lastZeroed[full-100:])
	shapes := map[string][]byte{
		"cut in the header":               orig[:good+5],
		"cut before the header's newline": orig[:headerEnd-1],
		"the header alone":                orig[:headerEnd],
		"cut in a document":               orig[:headerEnd+40],
		"cut before the last newline":     orig[:full-1],
		"zeros after the last record":     zeros(orig[:good], 4096-int(good)%4096),
		"zeros alone after the header":    zeros(orig[:len(`{"aso_memfile":2}`+"\n")], 300),
		"cut in a document, then zeros":   zeros(orig[:headerEnd+40], 4096),
		"the record's last bytes zeros":   zeros(lastZeroed, 512),
	}
	for name, data := range shapes {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			want := good
			if name == "zeros alone after the header" {
				want, kept = int64(len(`{"aso_memfile":2}`+"\n")), nil
			}
			var w warnings
			s := open(t, path, memfile.Options{Warn: w.add})
			if len(w.msgs) != 1 || !strings.Contains(w.msgs[0], "torn") || !strings.Contains(w.msgs[0], path) || !strings.Contains(w.msgs[0], fmt.Sprintf("offset %d", want)) {
				t.Fatalf("warnings %q, want one about the torn record at offset %d of %s", w.msgs, want, path)
			}
			if got := size(t, path); got != want {
				t.Fatalf("file is %d bytes after dropping the torn record, want %d", got, want)
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
			s = open(t, path, memfile.Options{Warn: w.add}) // reopening must not warn again
			if len(w.msgs) != 0 {
				t.Fatalf("warnings after repair: %q", w.msgs)
			}
			if _, err := s.Get(ctx, statetest.ReqID(statetest.Alice, 20)); err != nil {
				t.Fatalf("the record written after the repair: %v", err)
			}
		})
	}
}

// TestOpen_LastRecordDamaged: a byte changed inside the last complete
// record (its documents, its checksum, its length, the newline ending
// it) is damage, not a torn record (issue 43, case 3): open fails naming
// the file and the record's offset, for reading and writing alike, and
// the file is left as it is.
func TestOpen_LastRecordDamaged(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.aso")
	s := open(t, base, memfile.Options{})
	enqueue(t, s, 0, 2)
	last := size(t, base)
	enqueue(t, s, 10, 2)
	s.Close()
	orig, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := last + int64(bytes.IndexByte(orig[last:], '\n')) + 1
	for name, at := range map[string]int64{
		"a document":     headerEnd + 100,
		"the last byte":  int64(len(orig)) - 1,
		"its length":     last + int64(bytes.Index(orig[last:], []byte(`"bytes":`))) + int64(len(`"bytes":`)),
		"its checksum":   last + int64(bytes.Index(orig[last:], []byte(`"crc32c":"`))) + int64(len(`"crc32c":"`)),
		"its header end": headerEnd - 1,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			bad := bytes.Clone(orig)
			bad[at] ^= 0x01
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, o := range []memfile.Options{{}, {ReadOnly: true}} {
				_, err := memfile.OpenOptions(path, state.Config{}, o)
				if !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("%s:5 (offset %d)", path, last)) {
					t.Fatalf("open %+v: %v; want damage naming %s:5 (offset %d)", o, err, path, last)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, bad) {
				t.Fatal("a failed open changed the file")
			}
		})
	}
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
	if got, err := statetest.Claim(ctx, s, 10); err != nil || len(got) != 1 || got[0].ID != good.ID {
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
	rng := rand.New(rand.NewPCG(1, 2)) // a fixed seed that makes both handles compact
	records := map[*memfile.Store]int64{}
	for i := 0; i < 60; i++ {
		w := a
		if rng.IntN(2) == 1 {
			w = b
		}
		records[w]++
		all = append(all, enqueue(t, w, i*10, 1+rng.IntN(9))...)
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
	if sa.Fsyncs != records[a] || sa.JournalRecords != records[a] {
		t.Fatalf("stats a %+v; want %d fsynced records", sa, records[a])
	}
	// every document survives the compactions byte for byte
	want, err := a.List(ctx, state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, path, memfile.Options{})
	got, err := c.List(ctx, state.Filter{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("a new handle lists %d documents (%v), different from the writers' %d", len(got), err, len(want))
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
	ts, err := statetest.Claim(ctx, s, 1)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	before, st := size(t, path), s.Stats()
	res, err := statetest.Commit(ctx, s, []state.Commit{{Transfer: ts[0], DestPFN: "file:///x"}}, "job-1")
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

// TestOpen_LastVersionWins: a journal holds many versions of a document;
// reading the file yields the last one.
func TestOpen_LastVersionWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 3)
	for round := 0; round < 5; round++ {
		ts, err := statetest.Claim(ctx, s, 2)
		if err != nil || len(ts) != 2 {
			t.Fatal(ts, err)
		}
		ab := []state.Abort{{Transfer: ts[0], NoPenalty: true, Reason: fmt.Sprint("round ", round)}, {Transfer: ts[1], NoPenalty: true}}
		if res, err := s.AbortTransfers(ctx, ab); err != nil || res[0].Err != nil {
			t.Fatal(res, err)
		}
	}
	if st := s.Stats(); st.Compactions != 0 {
		t.Fatalf("compacted (%+v): the test needs the versions in the journal", st)
	}
	r := open(t, path, memfile.Options{})
	for _, id := range ids {
		want, _ := s.Get(ctx, id)
		got, err := r.Get(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("reopened %s:\n got %+v\nwant %+v", id, got, want)
		}
	}
}

// lockElsewhere takes the lock of the file at path through a handle of its
// own, as another process would, until the test ends or it is released.
func lockElsewhere(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLockWaitHonoursContext: a call waiting for a file lock that another
// process holds gives up when its context ends, and proceeds once released.
func TestLockWaitHonoursContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	id := enqueue(t, s, 0, 1)[0]
	f := lockElsewhere(t, path)
	c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Get(c, id); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("Get while the file is locked: %v, want a deadline error about the lock", err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Get(ctx, id); done <- err }()
	time.Sleep(20 * time.Millisecond) // let it wait: this test is about waiting
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Get after the lock was released: %v", err)
	}
}

// TestOpenWhileLockedElsewhere: Open waits at most Options.LockWait for a
// file lock another process holds (one stopped in the middle of a write,
// say), then fails with an error that names the file, instead of blocking
// every later run at its start; it opens once the lock is free.
func TestOpenWhileLockedElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	enqueue(t, open(t, path, memfile.Options{}), 0, 1)
	f := lockElsewhere(t, path)
	cfg := state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-b"}}
	start := time.Now()
	_, err := memfile.OpenOptions(path, cfg, memfile.Options{LockWait: 100 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open while another process holds the lock: %v, want a deadline error naming %s", err, path)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("Open waited %s for a lock wait of 100ms", waited)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	s, err := memfile.OpenOptions(path, cfg, memfile.Options{LockWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open once the lock is free: %v", err)
	}
	s.Close()
}

// TestOpen_HandEditedLine: every document is in a checked record, so a
// line added by hand (at the end, with or without its newline, or
// between records) is damage naming its line, not a document, and
// neither kept nor dropped in silence; the file is left as it is.
func TestOpen_HandEditedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	enqueue(t, s, 0, 1)
	s.Close()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := docLine(t, state.NewTransfer(statetest.Req(statetest.Alice, 7), statetest.Start, "hand"))
	second := bytes.IndexByte(orig, '\n') + 1
	for name, data := range map[string][]byte{
		"appended":                 append(bytes.Clone(orig), line...),
		"appended without newline": append(bytes.Clone(orig), strings.TrimSuffix(line, "\n")...),
		"inserted":                 append(append(bytes.Clone(orig[:second]), line...), orig[second:]...),
		"garbage appended":         append(bytes.Clone(orig), "oops, not json"...),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			want := path + ":4 "
			if name == "inserted" {
				want = path + ":2 "
			}
			if _, err := memfile.Open(path, state.Config{}); !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open: %v, want damage naming %s", err, want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("a failed Open changed the file")
			}
		})
	}
}

// TestCompactionFailure: a compaction that cannot write its file leaves the
// journal as it is, fails no call, and is not retried by every call.
func TestCompactionFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	if err := os.Mkdir(path+".compact", 0o700); err != nil { // the temp file cannot be created
		t.Fatal(err)
	}
	var w warnings
	s := open(t, path, memfile.Options{CompactBytes: 1, Warn: w.add})
	var ids []string
	const writes = 16
	for i := 0; i < writes; i++ {
		ids = append(ids, enqueue(t, s, i*10, 5)...)
	}
	// retried each time the file doubled: after writes 1, 2, 4, 8 and 16
	if st := s.Stats(); st.Compactions != 0 || len(w.msgs) == 0 || len(w.msgs) > 5 || !strings.Contains(w.msgs[0], "compact") {
		t.Fatalf("stats %+v, %d warnings %q; want a few about the failed compaction, not one per write", st, len(w.msgs), w.msgs)
	}
	if err := s.Compact(ctx); err == nil {
		t.Fatal("Compact succeeded without its temp file")
	}
	if err := os.Remove(path + ".compact"); err != nil {
		t.Fatal(err)
	}
	for i := writes; s.Stats().Compactions == 0; i++ {
		if i > 4*writes {
			t.Fatal("no compaction once the temp file could be written again")
		}
		ids = append(ids, enqueue(t, s, i*10, 5)...)
	}
	r := open(t, path, memfile.Options{})
	if ls, err := r.List(ctx, state.Filter{}); err != nil || len(ls) != len(ids) {
		t.Fatalf("after the compaction: %d transfers, %v; want %d", len(ls), err, len(ids))
	}
}
