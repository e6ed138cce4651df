package memfile

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
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
		return &state.LockDoc{ID: d.ID, Rev: d.Rev, Type: d.Type, User: d.User, Holder: d.Holder, Expire: d.Expire, Since: d.Since, LastRun: d.LastRun}
	}
	return &d.Transfer
}

// encodeOne returns the line encodeBatch writes for doc.
func encodeOne(tb testing.TB, doc any) []byte {
	tb.Helper()
	rec, spans, _, err := encodeBatch(nil, []any{doc})
	if err != nil {
		tb.Fatal(err)
	}
	return rec[spans[0].off : spans[0].off+int64(spans[0].n)]
}

// TestEncodeAsTheHandWrittenCodec: every document version in the file the
// hand-written codec wrote, decoded and encoded again, gives the same
// bytes: the file's format has not changed.
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
		if id := canonicalID(line); string(id) != d.ID {
			t.Fatalf("line %d: the scanner reads the ID %q without decoding the line, want %q", n+2, id, d.ID)
		}
		if got := encodeOne(t, stored(&d)); !bytes.Equal(got, line) {
			t.Fatalf("line %d encodes differently:\n%s\nwant\n%s", n+2, got, line)
		}
	}
	if transfers < 15 || locks != 2 {
		t.Fatalf("the file holds %d transfer and %d lock versions", transfers, locks)
	}
}

// FuzzDecodeDoc: a line of a state file decodes as encoding/json decodes
// it (the same document, or a refusal), so a file reads as it always
// did; the scanner files a line under the ID it decodes to (lineID); and
// a document the store accepts, written again, is found under its own ID
// by the scanner and reads back to the same bytes.
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
		var got, want anyDoc
		err, wantErr := decodeJSON(line, &got), json.Unmarshal(line, &want)
		if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s decodes as\n%+v, %v\nencoding/json:\n%+v, %v", line, got, err, want, wantErr)
		}
		if err := decodeDoc(line, &got); err != nil && got.ID == "" {
			return // not a document
		} else if id := lineID(line); string(id) != got.ID {
			t.Fatalf("the scanner files %s under ID %q, the decoder reads %q", line, id, got.ID)
		} else if err != nil {
			return
		}
		first := encodeOne(t, stored(&got))
		if id := lineID(first); string(id) != got.ID {
			t.Fatalf("the store writes %s as %s, which the scanner finds under ID %q", line, first, id)
		}
		var again anyDoc
		if err := decodeDoc(first, &again); err != nil {
			t.Fatalf("the store writes %s as %s, which no longer decodes: %v", line, first, err)
		}
		if second := encodeOne(t, stored(&again)); !bytes.Equal(second, first) {
			t.Fatalf("%s written again changes:\n%s\n%s", line, first, second)
		}
	})
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
	var d anyDoc
	for range b.N {
		if err := decodeDoc(doc, &d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeBatch encodes a record of 200 transfers, a job's.
func BenchmarkEncodeBatch(b *testing.B) {
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = benchDoc(b)
	}
	b.ReportAllocs()
	var buf []byte
	for range b.N {
		var err error
		if _, _, buf, err = encodeBatch(buf, docs); err != nil {
			b.Fatal(err)
		}
	}
}
