package memfile

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// oldLines returns the lines of testdata/handwritten.aso (written by the
// hand-written codec memfile had before, see oldfile_test.go) but the
// first, the header.
func oldLines(tb testing.TB) [][]byte {
	data, err := os.ReadFile("testdata/handwritten.aso")
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'})[1:]
}

// stored is the document d as the store writes it: a transfer or a lock.
func stored(d *anyDoc) any {
	if d.Type == state.LockDocType {
		return d.lock()
	}
	return &d.Transfer
}

// encodeOne returns the line encodeRecord writes for doc.
func encodeOne(tb testing.TB, doc any) []byte {
	tb.Helper()
	rec, ends, err := encodeRecord(nil, false, []any{doc})
	if err != nil {
		tb.Fatal(err)
	}
	return rec[bytes.IndexByte(rec, '\n')+1 : ends[0]]
}

// TestEncodeAsTheHandWrittenCodec: every document version in the file the
// hand-written codec wrote, decoded and encoded again, gives the same
// bytes: the documents' form has not changed.
func TestEncodeAsTheHandWrittenCodec(t *testing.T) {
	transfers, locks := 0, 0
	for n, line := range oldLines(t) {
		if bytes.HasPrefix(line, batchPrefix) {
			continue
		}
		var d anyDoc
		if err := decodeDoc(line, &d); err != nil {
			if d.ID != "hand-added" {
				t.Fatalf("line %d: %v", n+2, err)
			}
			continue
		}
		if d.Type == state.LockDocType {
			locks++
		} else {
			transfers++
		}
		if got := encodeOne(t, stored(&d)); !bytes.Equal(got, line) {
			t.Fatalf("line %d encodes differently:\n%s\nwant\n%s", n+2, got, line)
		}
	}
	if transfers < 15 || locks != 2 {
		t.Fatalf("the file holds %d transfer and %d lock versions", transfers, locks)
	}
}

// FuzzDecodeDoc: any line of a state file decodes to a document, an
// invalid document that names itself, or a refusal, without a panic; a
// document the store accepts, written again, reads back to the same
// bytes, and a record of it reads back whole.
func FuzzDecodeDoc(f *testing.F) {
	for _, line := range oldLines(f) {
		f.Add(line)
	}
	for _, s := range []string{
		`{"_id":"a","_id":"b"}`, `{"_ID":"a","Size":1,"size":2}`, `{"_id":"a","_ID":"b"}`, `{"_id":"a","_i\u0064":"b"}`, "{\"_id\":\"a\xff\"}", `{"_id":"a","size":1e3}`,
		`{"progress":{"throughput":1e-7,"updated":null}}`, `{"created":"2026-04-31T00:00:00.000000Z"}`,
		`{"checksums":{},"history":[],"depends_on":null}`, `{"_id":"a","created":"2026-01-01T00:00:00+01:00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got anyDoc
		if err := decodeDoc(line, &got); err != nil {
			if got.ID == "" && !errors.Is(err, errNotDoc) {
				t.Fatalf("%s refused (%v) without naming a document, yet not as errNotDoc", line, err)
			}
			return
		}
		first := encodeOne(t, stored(&got))
		var again anyDoc
		if err := decodeDoc(first, &again); err != nil {
			t.Fatalf("the store writes %s as %s, which no longer decodes: %v", line, first, err)
		}
		if second := encodeOne(t, stored(&again)); !bytes.Equal(second, first) {
			t.Fatalf("%s written again changes:\n%s\n%s", line, first, second)
		}
		rec, _, err := encodeRecord(nil, false, []any{first})
		if err != nil {
			t.Fatal(err)
		}
		rd := newReader(bytes.NewReader(rec), "fuzz", false, 0, int64(len(rec)), 0)
		if r, err := rd.next(); err != nil || len(r.docs) != 1 || !bytes.Equal(r.docs[0], first) {
			t.Fatalf("the record of %s reads back as %q, %v", first, r.docs, err)
		}
	})
}

// FuzzWritten: a transfer that written takes decodes from its encoding
// exactly as it is, whatever its strings (valid UTF-8 or not), times
// (location, precision, monotonic reading, range) and collections (nil,
// empty, full): what memory keeps of a write is what a reader of the
// file reads.
func FuzzWritten(f *testing.F) {
	f.Add("alice", "/store/user/a.root", "lost \xff", int64(1767225600123456000), uint8(0), uint8(1))
	f.Add("b\u2028<&>", "", "", int64(-62135596800000000), uint8(7), uint8(2))
	req := statetest.Req(statetest.Alice, 1)
	id := req.ID()
	f.Fuzz(func(t *testing.T, user, lfn, reason string, nanos int64, flags, coll uint8) {
		at := time.Unix(0, nanos)
		switch flags % 4 { // the forms a time can take
		case 0:
			at = at.UTC()
		case 1:
			at = at.In(time.FixedZone("X", 3600))
		case 2:
			at = time.Now().Add(time.Duration(nanos % int64(time.Hour))) // with a monotonic reading
		}
		if flags&4 != 0 {
			at = at.Truncate(time.Microsecond)
		}
		tr := state.Transfer{ID: id, Rev: "1-a", Type: "transfer", User: user,
			SourceLFN: lfn, DestinationLFN: lfn, State: state.StateNew, Reason: reason,
			Created: state.Time{Time: at}, LastUpdate: state.At(at), RetryAfter: state.Time{Time: at.Add(time.Hour)}}
		switch coll % 3 {
		case 1:
			tr.Checksums, tr.DependsOn, tr.History = map[string]string{}, []string{}, []state.Transition{}
		case 2:
			tr.Checksums = map[string]string{user: reason, "adler32": lfn}
			tr.DependsOn = []string{lfn}
			tr.History = []state.Transition{{At: state.Time{Time: at}, To: state.StateNew, By: user, Reason: reason}}
			tr.Progress = &state.Progress{FTSState: reason, Throughput: float64(nanos) / 7, Updated: state.Time{Time: at}}
		}
		rec, ends, err := encodeRecord(nil, false, []any{&tr})
		if err != nil {
			return // not written to the file at all
		}
		enc := rec[bytes.IndexByte(rec, '\n')+1 : ends[0]]
		if !written(&tr, enc) {
			return
		}
		var got anyDoc
		if err := decodeDoc(enc, &got); err != nil && got.ID == "" {
			t.Fatalf("written took a transfer whose encoding does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(&got.Transfer, &tr) {
			t.Fatalf("written took a transfer that decodes otherwise:\n%+v\n%+v\n%s", &tr, &got.Transfer, enc)
		}
	})
}

// TestWritten_TakesRuleOutputs: the versions the rules of package state
// write through a transfer's life are kept as they are, not decoded
// again (a written that took none would pass every other test, and
// double the CPU of every write).
func TestWritten_TakesRuleOutputs(t *testing.T) {
	now := time.Now()
	ag := state.Agent{User: statetest.Alice, Owner: "agent-a"}
	tr := state.NewTransfer(statetest.Req(statetest.Alice, 1), now, "cli")
	steps := []func() error{
		func() error { return state.Claim(&tr, ag, now, time.Hour) },
		func() error { return state.Prepare(&tr, ag, "sid-1", now, time.Hour) },
		func() error {
			return state.CommitTo(&tr, ag, state.Commit{Transfer: tr, SourcePFN: "davs://a/x", DestPFN: "davs://b/x", FileID: 3}, "job-1", now)
		},
		func() error { return state.ApplyTransient(&tr, state.Progress{FTSState: "ACTIVE", Bytes: 10}, now) },
		func() error {
			_, err := state.ApplyTerminal(&tr, ag, state.Terminal{Transfer: tr, Outcome: state.OutcomeFailed, Reason: "no space", FTSJob: "job-1"}, state.Policy{}.WithDefaults(), now)
			return err
		},
	}
	for i, step := range append([]func() error{func() error { return nil }}, steps...) {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !written(&tr, encodeOne(t, &tr)) {
			t.Fatalf("step %d: the version in state %s is decoded again: %+v", i, tr.State, tr)
		}
	}
}

// benchDoc returns a transfer as the store holds most of them while they
// are submitted.
func benchDoc(tb testing.TB) *state.Transfer {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := state.Request{User: "alice", Group: "cms", Source: "T2_US_Nebraska", Destination: "T1_DE_KIT",
		SourceLFN: "/store/temp/user/alice/out_12345.root", DestinationLFN: "/store/user/alice/out_12345.root",
		Size: 13345, Checksums: map[string]string{"adler32": "00003039"}}
	tr := state.NewTransfer(r, now, "aso")
	a := state.Agent{User: "alice", Owner: "host.example.org:4242:0a1b2c3d"}
	if err := state.Claim(&tr, a, now, time.Minute); err != nil {
		tb.Fatal(err)
	}
	if err := state.Prepare(&tr, a, "sid-0123456789abcdef", now, time.Minute); err != nil {
		tb.Fatal(err)
	}
	c := state.Commit{Transfer: tr, SourcePFN: "davs://src.example.org/store/temp/user/alice/out_12345.root",
		DestPFN: "davs://dst.example.org/store/user/alice/out_12345.root", FileID: 17}
	if err := state.CommitTo(&tr, a, c, "0b6e2b6c-3c5e-5e1e-9b8a-1d2c3e4f5a6b", now); err != nil {
		tb.Fatal(err)
	}
	tr.Rev = "4-1f2e3d4c5b6a7988"
	return &tr
}

func BenchmarkDecodeDoc(b *testing.B) {
	doc := encodeOne(b, benchDoc(b))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var d anyDoc
		if err := decodeDoc(doc, &d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeRecord encodes a record of 200 transfers, a job's.
func BenchmarkEncodeRecord(b *testing.B) {
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = benchDoc(b)
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		rec, _, err := encodeRecord(buf, false, docs)
		if err != nil {
			b.Fatal(err)
		}
		buf = rec[:0]
	}
}
