package enqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// FuzzRecordReader reads an `aso enqueue` input (JSON array or JSON lines)
// as the command does. Invariants: no panic and no endless loop; every
// record and every input error names a line of the input; in JSON lines,
// every non-blank line gives exactly one record, with its own line number;
// a valid JSON array gives one record per element and no input error, and
// an invalid one ends in an input error; every accepted request
// round-trips through its JSON encoding.
func FuzzRecordReader(f *testing.F) {
	f.Add([]byte(`{"size":1,"user":"u","source":"A","destination":"B","source_lfn":"/a","destination_lfn":"/b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		lines := bytes.Count(body, []byte{'\n'}) + 1
		isArray := len(bytes.TrimLeft(body, " \t\r\n")) > 0 && bytes.TrimLeft(body, " \t\r\n")[0] == '['
		rr := newRecordReader(bytes.NewReader(data))
		var recs []record
		var end error
		for {
			rec, err := rr.next()
			if err != nil {
				end = err
				break
			}
			if len(recs) > len(data)+1 {
				t.Fatalf("more records (%d) than input bytes: endless loop", len(recs))
			}
			checkRecord(t, rec, lines, recs)
			recs = append(recs, rec)
		}
		var ie *inputError
		if !errors.Is(end, io.EOF) {
			if !errors.As(end, &ie) || ie.line < 1 || ie.line > lines || !strings.Contains(ie.Error(), fmt.Sprintf("line %d", ie.line)) {
				t.Fatalf("input error %v (%T) does not name a line of the %d-line input", end, end, lines)
			}
		}
		if isArray {
			checkArray(t, body, recs, ie)
			return
		}
		if ie != nil {
			t.Fatalf("JSON lines from memory gave an input error: %v", ie)
		}
		var want []int
		for i, l := range bytes.Split(body, []byte{'\n'}) {
			if len(bytes.TrimSpace(l)) > 0 {
				want = append(want, i+1)
			}
		}
		if len(recs) != len(want) {
			t.Fatalf("%d records for %d non-blank lines", len(recs), len(want))
		}
		for i, rec := range recs {
			if rec.line != want[i] || rec.index != -1 {
				t.Fatalf("record %d: line %d index %d, want line %d", i, rec.line, rec.index, want[i])
			}
		}
	})
}

// checkRecord checks one record against the input's line count and the
// records before it.
func checkRecord(t *testing.T, rec record, lines int, before []record) {
	t.Helper()
	if rec.line < 1 || rec.line > lines {
		t.Fatalf("record at line %d of a %d-line input", rec.line, lines)
	}
	if n := len(before); n > 0 && rec.line < before[n-1].line {
		t.Fatalf("record at line %d after one at line %d", rec.line, before[n-1].line)
	}
	if rec.err != nil {
		if rec.err.Error() == "" || !strings.HasPrefix(rec.where(), "line ") && !strings.HasPrefix(rec.where(), "element ") {
			t.Fatalf("rejection %q at %q names no place or reason", rec.err, rec.where())
		}
		return
	}
	b, err := json.Marshal(rec.req)
	if err != nil {
		t.Fatalf("encode an accepted request: %v", err)
	}
	back, err := decodeRequest(b)
	if err != nil {
		t.Fatalf("an accepted request does not decode from its own encoding: %v\n%s", err, b)
	}
	if b2, _ := json.Marshal(back); !bytes.Equal(b, b2) {
		t.Fatalf("request changed across a round trip:\n%s\n%s", b, b2)
	}
}

// checkArray checks the records of an input that starts with '['.
func checkArray(t *testing.T, body []byte, recs []record, ie *inputError) {
	t.Helper()
	for i, rec := range recs {
		if rec.index != i {
			t.Fatalf("record %d has element index %d", i, rec.index)
		}
	}
	var elems []json.RawMessage
	if json.Unmarshal(body, &elems) != nil {
		if ie == nil {
			t.Fatalf("an input that is not a JSON array was read to its end without an input error")
		}
		return
	}
	if ie != nil {
		t.Fatalf("a valid JSON array of %d elements ended in %v", len(elems), ie)
	}
	if len(recs) != len(elems) {
		t.Fatalf("%d records for an array of %d elements", len(recs), len(elems))
	}
}
