package memfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
	"github.com/asyncstageout/aso/state/statetest"
)

// stateFile returns a state file of format 2 holding a journal record of
// each of bodies.
func stateFile(bodies ...string) []byte {
	data := []byte(`{"aso_memfile":2}` + "\n")
	for _, b := range bodies {
		data = append(data, memfiletest.JournalRecord([]byte(b))...)
	}
	return data
}

// FuzzStateFile opens a state file made of the header and a well-formed
// record around each of snapshot and journal (format 2), or, with v1, of
// snapshot lines and a record of format 1 around journal, as memfile.Open
// reads it (a file of format 1 is rewritten in format 2 at its first
// open). Invariants: no panic; a file that is refused is refused with an
// error naming the file and the line; a file that opens lists every
// invalid document with its ID and a reason, and reads back the same after
// a reopen and after a compaction rewrote it (valid documents round-trip).
func FuzzStateFile(f *testing.F) {
	for _, v1 := range []bool{false, true} {
		f.Add([]byte(`{"_id":"lock:alice","type":"lock","user":"alice","holder":"h","expire":null}`), []byte(`{"_id":"x","type":"transfer","size":"big"}`), v1)
	}
	lineRef := regexp.MustCompile(`\.aso:[1-9][0-9]*[ :]`)
	f.Fuzz(func(t *testing.T, snapshot, journal []byte, v1 bool) {
		path := filepath.Join(t.TempDir(), "s.aso")
		data := stateFile(string(snapshot), string(journal))
		if v1 {
			data = append([]byte(`{"aso_memfile":1}`+"\n"), snapshot...)
			if len(snapshot) > 0 && snapshot[len(snapshot)-1] != '\n' {
				data = append(data, '\n')
			}
			rec := memfiletest.JournalRecord(journal) // the header of format 1 lacks hcrc
			i := bytes.Index(rec, []byte(`,"hcrc"`))
			data = append(append(data, rec[:i]...), append([]byte("}\n"), rec[bytes.IndexByte(rec, '\n')+1:]...)...)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		first, err := summaryOf(path, false)
		if err != nil {
			if !strings.Contains(err.Error(), path) || !lineRef.MatchString(err.Error()) {
				t.Fatalf("refusal %q does not name the file and line", err)
			}
			return
		}
		for _, d := range first.Invalid {
			if d.ID == "" || d.Reason == "" {
				t.Fatalf("invalid document listed without ID or reason: %+v", d)
			}
		}
		for _, step := range []struct {
			name    string
			compact bool
		}{{"reopen", false}, {"compaction", true}, {"reopen after compaction", false}} {
			again, err := summaryOf(path, step.compact)
			if err != nil {
				t.Fatalf("%s: a file that opened fails: %v", step.name, err)
			}
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(again)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s changed what the file holds:\n%s\n%s", step.name, a, b)
			}
		}
	})
}

// FuzzOpen: whatever the file holds, Open either fails with an error
// naming the file (damage, not a state file, not a store yet) or gives a
// store whose calls work, and never drops a complete record silently:
// every document of the records that check out, from the start of the
// file on, is in the store, and if those records do not reach the end of
// the file, what follows them was dropped with a warning; and any
// complete record that checks out, wherever a line of the file starts
// one, has its documents in the store (a warning is not enough for it).
// It never panics.
func FuzzOpen(f *testing.F) {
	seed := seedFile(f)
	last := bytes.LastIndex(seed, []byte("\n{\"batch\":")) + 1
	f.Add(seed)
	f.Add(append(bytes.Clone(seed), make([]byte, 300)...))            // a tail of zeros
	f.Add(append(bytes.Clone(seed[:last+90]), make([]byte, 4096)...)) // a record cut short, then zeros
	f.Add(append(bytes.Clone(seed), seed[last:len(seed)-1]...))       // a record cut short
	f.Add(recordInTornTail(seed))
	f.Add([]byte(`{"aso_memfile":1}` + "\n" + `{"_id":"lock:alice","type":"lock","user":"alice","holder":"h","expire":"2026-01-01T00:00:00.000000Z"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "state.aso")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var w warnings
		s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "fuzz"}}, memfile.Options{Warn: w.add})
		if err != nil {
			if !errors.Is(err, memfile.ErrDamaged) && !errors.Is(err, memfile.ErrNotStateFile) && !errors.Is(err, memfile.ErrNoStore) || !strings.Contains(err.Error(), path) {
				t.Fatalf("open fails with %v: not damage naming the file", err)
			}
			return
		}
		defer s.Close()
		if want, end, ok := checkedRecords(data); ok {
			if got := storedIDs(t, s); !sameSet(got, want) {
				t.Fatalf("the store holds %v; the records that check out hold %v", got, want)
			}
			if end < len(data) && len(w.msgs) == 0 {
				t.Fatalf("the records that check out end at %d of %d bytes, and the rest was dropped without a warning", end, len(data))
			}
		}
		stored := storedIDs(t, s)
		for at, ids := range everyCheckedRecord(data) {
			for _, id := range ids {
				if !slices.Contains(stored, id) {
					t.Fatalf("the record at offset %d checks out, and its document %s is not in the store (warnings %q)", at, id, w.msgs)
				}
			}
		}
		if _, err := statetest.Claim(ctx, s, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireLock(ctx, statetest.Alice, "fuzz", time.Minute); err != nil && !errors.Is(err, state.ErrLocked) {
			t.Fatal(err)
		}
	})
}

// seedFile returns a state file as the store writes it: a snapshot of
// three transfers (one claimed), then journal records of two more.
func seedFile(f *testing.F) []byte {
	path := filepath.Join(f.TempDir(), "seed.aso")
	s := open(f, path, memfile.Options{})
	enqueue(f, s, 0, 3)
	if ts, err := statetest.Claim(ctx, s, 1); err != nil || len(ts) != 1 {
		f.Fatal(ts, err)
	}
	if err := s.Compact(ctx); err != nil {
		f.Fatal(err)
	}
	enqueue(f, s, 3, 2)
	s.Close()
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return seed
}

// FuzzFlippedByte: a state file as the store writes it (a snapshot, then
// journal records), with one byte changed anywhere after its first line
// (issue 43, case 3), is never read as if nothing had happened: Open
// fails with ErrDamaged naming the file and leaves it as it is, or, only
// when the change made the file's last byte a zero (which is also what a
// tail of zeros ends in), drops the last record with a warning.
func FuzzFlippedByte(f *testing.F) {
	seed := seedFile(f)
	first := bytes.IndexByte(seed, '\n') + 1
	last := bytes.LastIndex(seed, []byte(`{"batch":`))
	for _, at := range []int{len(seed) - 1, len(seed) - 40, last + 10, last - 1, first + 20, first} {
		f.Add(uint32(at-first), byte(0x04))
	}
	f.Add(uint32(len(seed)-1-first), byte('\n'))
	f.Fuzz(func(t *testing.T, at uint32, x byte) {
		if x == 0 {
			t.Skip("no change")
		}
		i := first + int(at%uint32(len(seed)-first))
		data := bytes.Clone(seed)
		data[i] ^= x
		path := filepath.Join(t.TempDir(), "state.aso")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var w warnings
		s, err := memfile.OpenOptions(path, state.Config{}, memfile.Options{Warn: w.add})
		if err == nil {
			s.Close()
			if i != len(data)-1 || data[i] != 0 || len(w.msgs) != 1 {
				t.Fatalf("byte %d changed by %#x: the file opened (warnings %q)", i, x, w.msgs)
			}
			return
		}
		if !errors.Is(err, memfile.ErrDamaged) || !strings.Contains(err.Error(), path) {
			t.Fatalf("byte %d changed by %#x: %v, want damage naming the file", i, x, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
			t.Fatalf("byte %d changed by %#x: a failed open changed the file", i, x)
		}
	})
}

// recordInTornTail returns file followed by what looks like a journal
// record cut short by a crash (a sound header claiming more bytes than
// follow it) but holds a complete record that checks out, which no crash
// leaves: an append never follows a torn one.
func recordInTornTail(file []byte) []byte {
	inner := memfiletest.JournalRecord([]byte(`{"_id":"inner","type":"transfer"}` + "\n"))
	outer := memfiletest.JournalRecord(append(append([]byte(`{"_id":"outer","type":"transfer"}`+"\n"), inner...), `{"_id":"more","type":"transfer"}`+"\n"...))
	cut := bytes.Index(outer, inner) + len(inner)
	return append(bytes.Clone(file), outer[:cut]...)
}

// recordHeader is a record header of format 2, its CRC-32C checked apart.
var recordHeader = regexp.MustCompile(`^\{"(batch|snapshot)":([1-9][0-9]*),"bytes":([1-9][0-9]*),"crc32c":"([0-9a-f]{8})","hcrc":"([0-9a-f]{8})"\}\n`)

// checkedRecords reads data as a state file of format 2 apart from the
// store: it returns the IDs of the documents of its records that check
// out, from the first on, and where they end. ok is false for a file
// that is not of format 2.
func checkedRecords(data []byte) (ids []string, end int, ok bool) {
	header := []byte(`{"aso_memfile":2}` + "\n")
	if !bytes.HasPrefix(data, header) {
		return nil, 0, false
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	for end = len(header); ; {
		m := recordHeader.FindSubmatch(data[end:])
		if m == nil {
			return ids, end, true
		}
		n, _ := strconv.Atoi(string(m[3]))
		docs, _ := strconv.Atoi(string(m[2]))
		start := end + len(m[0])
		h := m[0][:bytes.Index(m[0], []byte(`,"hcrc"`))]
		if fmt.Sprintf("%08x", crc32.Checksum(h, table)) != string(m[5]) || n > len(data)-start ||
			fmt.Sprintf("%08x", crc32.Checksum(data[start:start+n], table)) != string(m[4]) || bytes.Count(data[start:start+n], []byte{'\n'}) != docs || data[start+n-1] != '\n' {
			return ids, end, true
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(data[start:start+n], []byte{'\n'}), []byte{'\n'}) {
			var d struct {
				ID string `json:"_id"`
			}
			if json.Unmarshal(line, &d) == nil && d.ID != "" && !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
		}
		end = start + n
	}
}

// recordHeaderV1 is a record header of format 1, without a CRC-32C of
// its own; its groups are those of recordHeader.
var recordHeaderV1 = regexp.MustCompile(`^\{"(batch)":([1-9][0-9]*),"bytes":([1-9][0-9]*),"crc32c":"([0-9a-f]{8})"\}\n`)

// everyCheckedRecord returns, by offset, the IDs of the documents of
// every complete record that checks out wherever a line of data after
// the first starts one, apart from the store: records of format 2, and
// in a file of format 1 those of format 1 too.
func everyCheckedRecord(data []byte) map[int][]string {
	v1 := bytes.HasPrefix(data, []byte(`{"aso_memfile":1}`+"\n"))
	table := crc32.MakeTable(crc32.Castagnoli)
	hex := func(b []byte) string { return fmt.Sprintf("%08x", crc32.Checksum(b, table)) }
	out := map[int][]string{}
	for at := bytes.IndexByte(data, '\n') + 1; at > 0 && at < len(data); {
		m := recordHeader.FindSubmatch(data[at:])
		headerOK := m != nil && hex(m[0][:bytes.Index(m[0], []byte(`,"hcrc"`))]) == string(m[5])
		if m == nil && v1 {
			m = recordHeaderV1.FindSubmatch(data[at:])
			headerOK = m != nil
		}
		if headerOK {
			docs, _ := strconv.Atoi(string(m[2]))
			n, _ := strconv.Atoi(string(m[3]))
			start := at + len(m[0])
			if n <= len(data)-start && hex(data[start:start+n]) == string(m[4]) && bytes.Count(data[start:start+n], []byte{'\n'}) == docs && data[start+n-1] == '\n' {
				for _, line := range bytes.Split(data[start:start+n-1], []byte{'\n'}) {
					var d struct {
						ID string `json:"_id"`
					}
					if json.Unmarshal(line, &d) == nil && d.ID != "" {
						out[at] = append(out[at], d.ID)
					}
				}
			}
		}
		nl := bytes.IndexByte(data[at:], '\n')
		if nl < 0 {
			break
		}
		at += nl + 1
	}
	return out
}

// storedIDs returns the IDs of every document s holds: transfers, invalid
// documents and run locks.
func storedIDs(t *testing.T, s *memfile.Store) []string {
	t.Helper()
	ts, err := s.List(ctx, state.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	locks, err := s.Locks(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := idsOfList(ts)
	for _, d := range sum.Invalid {
		ids = append(ids, d.ID)
	}
	for _, l := range locks {
		ids = append(ids, l.ID)
	}
	return ids
}

// summaryOf opens the file, optionally compacts it, and returns the
// summary of every user.
func summaryOf(path string, compact bool) (state.Summary, error) {
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "alice", Owner: "fuzz"}, Now: now})
	if err != nil {
		return state.Summary{}, err
	}
	defer s.Close()
	if compact {
		if err := s.Compact(context.Background()); err != nil {
			return state.Summary{}, err
		}
	}
	return s.Summary(context.Background(), state.SummaryOptions{})
}
