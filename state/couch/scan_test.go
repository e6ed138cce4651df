package couch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// FuzzExtraFields checks the top-level scan against a full decode: for
// every JSON object both find the same unknown fields with the same values,
// and the scan never panics on anything else.
func FuzzExtraFields(f *testing.F) {
	for _, s := range []string{
		`{"_id":"a","type":"transfer","crab_task":"t1","job_id":7,"publish":true}`,
		`{"x":{"y":[1,"}",{"z":"\"]"}]},"_rev":"1-a","user":"u"}`,
		` { "a" : [ ] , "b" : { } , "c" : null , "d" : -1.5e3 } `,
		`{"k\"ey":1,"user":"u"}`,
		`{"\u0075ser":"escaped known key","v":1}`,
		`{}`, `[]`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":"unterminated}`,
	} {
		f.Add([]byte(s))
	}
	// the seeds of FuzzDecode: real-format transfer documents
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		if doc, ok := corpusBytes(b); ok {
			f.Add(doc)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := extraFields(raw)
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return // not an object: decode refuses the document before this
		}
		want := extraFieldsSlow(raw)
		if len(got) != len(want) {
			t.Fatalf("scan found %v, decode %v", keys(got), keys(want))
		}
		for k, v := range want {
			g, ok := got[k]
			if !ok || !sameJSON(g, v) {
				t.Fatalf("field %q: scan %s, decode %s", k, g, v)
			}
		}
	})
}

// TestExtraFields_KnownOnly: a document of known fields yields nil.
func TestExtraFields_KnownOnly(t *testing.T) {
	raw := []byte(`{"_id":"t1","_rev":"3-x","_conflicts":["2-y"],"type":"transfer","user":"u","state":"new","history":[{"state":"new"}]}`)
	if got := extraFields(raw); got != nil {
		t.Fatalf("extraFields = %v, want nil", got)
	}
	raw = []byte(`{"_id":"t1","type":"transfer","crab":{"task":"x","jobs":[1,2]},"user":"u"}`)
	got := extraFields(raw)
	if !reflect.DeepEqual(keys(got), []string{"crab"}) || string(got["crab"]) != `{"task":"x","jobs":[1,2]}` {
		t.Fatalf("extraFields = %v", got)
	}
}

// corpusBytes returns the []byte value of a "go test fuzz v1" corpus file.
func corpusBytes(b []byte) ([]byte, bool) {
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) < 2 || !bytes.HasPrefix(lines[1], []byte("[]byte(")) {
		return nil, false
	}
	q := bytes.TrimSuffix(bytes.TrimPrefix(bytes.TrimSpace(lines[1]), []byte("[]byte(")), []byte(")"))
	s, err := strconv.Unquote(string(q))
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}
