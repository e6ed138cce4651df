package memfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
	"github.com/asyncstageout/aso/state/statetest"
)

// recordOffsets returns the offsets of the journal record headers of path.
func recordOffsets(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for at := 0; ; {
		i := strings.Index(string(b[at:]), `{"batch":`)
		if i < 0 {
			return out
		}
		out = append(out, at+i)
		at += i + 1
	}
}

func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x04
	f.WriteAt(b, off)
}

func TestFsck_FlippedBit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, path, memfile.Options{})
	first := enqueue(t, s, 0, 3)               // record 1
	second := enqueue(t, s, 3, 2)              // record 2
	third := enqueue(t, s, 5, 2)               // record 3
	claimed, err := statetest.Claim(ctx, s, 1) // record 4: first[0] becomes acquired
	if err != nil || len(claimed) != 1 {
		t.Fatal(claimed, err)
	}
	s.Close()
	rep, err := memfile.Check(path)
	if err != nil || rep.Damaged() || rep.Documents != 7 {
		t.Fatalf("a sound file: %+v, %v", rep, err)
	}

	recs := recordOffsets(t, path)
	flipBit(t, path, int64(recs[1]+200)) // inside the body of record 2
	flipBit(t, path, int64(recs[3]+150)) // inside the claim of first[0]
	if _, err := memfile.Open(path, state.Config{}); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("open of a damaged file: %v", err)
	}
	rep, err = memfile.Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 2 || !strings.Contains(rep.Problems[0].What, "fails its checksum") {
		t.Fatalf("problems %+v", rep.Problems)
	}
	if got := rep.Problems[0].Dropped; !slices.Equal(got, second) {
		t.Fatalf("dropped %v, want the documents of record 2 %v", got, second)
	}
	losses := map[string]int{}
	for _, l := range rep.Losses {
		losses[l.ID] = l.Line
	}
	if len(losses) != 3 || losses[second[0]] != 0 || losses[second[1]] != 0 || losses[claimed[0].ID] == 0 {
		t.Fatalf("losses %+v: want record 2's transfers lost, the claimed one back to its first version", rep.Losses)
	}

	out := path + ".salvaged"
	if _, err := memfile.Salvage(path, out); err != nil {
		t.Fatal(err)
	}
	if _, err := memfile.Salvage(path, out); err == nil {
		t.Fatal("salvage over an existing file")
	}
	ns := open(t, out, memfile.Options{})
	got, err := ns.List(ctx, state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{}, first...), third...)
	if ids := idsOfList(got); !sameSet(ids, want) {
		t.Fatalf("salvaged %v, want %v", ids, want)
	}
	for _, tr := range got {
		if tr.State != state.StateNew {
			t.Fatalf("%s is %s: the claim was in a damaged record", tr.ID, tr.State)
		}
	}
	if rep, err := memfile.Check(out); err != nil || rep.Damaged() {
		t.Fatalf("the salvaged file: %+v %v", rep, err)
	}
}

func TestFsck_Truncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 4)
	if err := s.Compact(ctx); err != nil { // a snapshot: one record a document
		t.Fatal(err)
	}
	s.Close()
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	cut := len(strings.Join(lines[:6], "")) + 40 // inside the third document, line 7
	if err := os.Truncate(path, int64(cut)); err != nil {
		t.Fatal(err)
	}
	// a snapshot is synced whole before it replaces the file: cut short,
	// it is damage, not an append a crash left torn
	if _, err := memfile.Open(path, state.Config{}); !errors.Is(err, memfile.ErrDamaged) {
		t.Fatalf("open of a truncated snapshot: %v", err)
	}
	rep, err := memfile.Check(path)
	if err != nil || len(rep.Problems) != 1 || rep.Documents != 2 || rep.Problems[0].Line != 6 || rep.TornTail != nil {
		t.Fatalf("check: %+v %v", rep, err)
	}
	out := path + ".salvaged"
	if _, err := memfile.Salvage(path, out); err != nil {
		t.Fatal(err)
	}
	got, err := open(t, out, memfile.Options{}).List(ctx, state.Filter{})
	if err != nil || len(got) != 2 {
		t.Fatalf("salvaged %d: %v", len(got), err)
	}
	for _, tr := range got {
		if !slices.Contains(ids, tr.ID) {
			t.Fatalf("salvaged an unknown transfer %s", tr.ID)
		}
	}
}

func idsOfList(ts []state.Transfer) []string {
	out := make([]string, len(ts))
	for i := range ts {
		out[i] = ts[i].ID
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestOpen_DamagedLengthIsNotTorn: a record whose header claims more bytes
// than the file has left, with records after it, has a damaged header
// (its own checksum fails), and the store must not cut them off.
func TestOpen_DamagedLengthIsNotTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, path, memfile.Options{})
	enqueue(t, s, 0, 1)
	enqueue(t, s, 1, 1)
	enqueue(t, s, 2, 1)
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := recordOffsets(t, path)
	at := recs[1] + strings.Index(string(b[recs[1]:]), `"bytes":`) + len(`"bytes":`)
	b = append(b[:at:at], append([]byte("9"), b[at:]...)...) // claims 9xxx bytes: more than the rest of the file
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = memfile.Open(path, state.Config{})
	if !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), "bad record header") {
		t.Fatalf("open: %v", err)
	}
	if after, _ := os.ReadFile(path); len(after) != len(b) {
		t.Fatalf("the store cut the file from %d to %d bytes", len(b), len(after))
	}
	rep, err := memfile.Check(path)
	if err != nil || len(rep.Problems) != 1 || rep.Documents != 2 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// TestOpen_RecordInTornTail: a tail that looks like an append cut short
// but holds a complete record that checks out is damage, not a torn
// record: open fails naming the tail's offset and leaves the file as it
// is, and fsck reads on from the record inside, which --repair keeps.
func TestOpen_RecordInTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 2)
	s.Close()
	good := size(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = recordInTornTail(b)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []memfile.Options{{}, {ReadOnly: true}} {
		var w warnings
		o.Warn = w.add
		_, err := memfile.OpenOptions(path, state.Config{}, o)
		if !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("(offset %d)", good)) || !strings.Contains(err.Error(), "with a record that checks out after it") {
			t.Fatalf("open %+v: %v; want damage at offset %d", o, err, good)
		}
		if len(w.msgs) != 0 {
			t.Fatalf("warnings %q: a tail holding a complete record was taken for a torn one", w.msgs)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("a failed open changed the file")
	}
	rep, err := memfile.Check(path)
	if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Offset != good || rep.TornTail != nil || rep.Documents != 3 {
		t.Fatalf("check: %+v %v; want one problem at offset %d and the inner record read", rep, err, good)
	}
	out := path + ".repaired"
	if _, err := memfile.Salvage(path, out); err != nil {
		t.Fatal(err)
	}
	sum, err := open(t, out, memfile.Options{}).Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, d := range sum.Invalid {
		got = append(got, d.ID)
	}
	if !slices.Contains(got, "inner") || slices.Contains(got, "outer") || sum.Total != len(ids) {
		t.Fatalf("repaired: %d transfers, invalid %v; want the %d transfers and the inner record's document", sum.Total, got, len(ids))
	}
}

// TestPurge_SnapshotDamaged: the snapshot a purge writes is checked like
// every record. One size digit changed in a transfer it kept (once read
// as a smaller transfer by status and passed by fsck) is damage: open
// fails naming the snapshot record's line and offset, for reading and
// writing alike, the file is left as it is, and Check drops that
// transfer and nothing else.
func TestPurge_SnapshotDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	s := open(t, path, memfile.Options{})
	ids := enqueue(t, s, 0, 4)
	if res, err := s.RequestKill(ctx, ids[:2]); err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("kill: %+v %v", res, err)
	}
	if n, err := s.Purge(ctx, state.PurgeOptions{Before: time.Now().Add(time.Hour)}); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v; want the 2 killed transfers", n, err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `{"batch":`) {
		t.Fatal("the purge left journal records: the file was not rewritten")
	}
	line := strings.Index(string(b), `"_id":"`+ids[3]+`"`)
	rec := strings.LastIndex(string(b[:line]), `{"snapshot":`)
	at := line + strings.Index(string(b[line:]), `"size":`) + len(`"size":`) + 3
	if rec < 0 || b[at] < '0' || b[at] > '9' {
		t.Fatalf("no size digit at %d in %q", at, b[rec:])
	}
	b[at] ^= 0x02 // 1003 becomes 1001
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s:%d (offset %d): snapshot record of 1 documents fails its checksum", path, strings.Count(string(b[:rec]), "\n")+1, rec)
	for _, o := range []memfile.Options{{}, {ReadOnly: true}} {
		if _, err := memfile.OpenOptions(path, state.Config{}, o); !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), where) {
			t.Fatalf("open %+v: %v; want damage %q", o, err, where)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("a failed open changed the file")
	}
	rep, err := memfile.Check(path)
	if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Offset != int64(rec) || !slices.Equal(rep.Problems[0].Dropped, ids[3:]) || rep.Documents != 1 {
		t.Fatalf("check: %+v %v; want the snapshot record of %s dropped, 1 document left", rep, err, ids[3])
	}
}

// TestDamagedWhileOpen: damage appended after a store was opened fails
// every later call with ErrDamaged, and Options.Damaged is told of it
// once, with that error.
func TestDamagedWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	var told []error
	s := open(t, path, memfile.Options{Damaged: func(err error) { told = append(told, err) }})
	ids := enqueue(t, s, 0, 2)
	memfiletest.AppendDamaged(t, path, `{"_id":"appended","type":"transfer"}`)
	for range 2 {
		if _, err := s.Get(ctx, ids[0]); !errors.Is(err, memfile.ErrDamaged) {
			t.Fatalf("get after the damage: %v, want ErrDamaged", err)
		}
	}
	if len(told) != 1 || !errors.Is(told[0], memfile.ErrDamaged) || !strings.Contains(told[0].Error(), path) {
		t.Fatalf("Damaged was told %v; want the damage once", told)
	}
}
