package memfile

import (
	"bytes"
	"os"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestEncodeAsTheHandWrittenCodec: every document version in the file the
// hand-written codec wrote (testdata/handwritten.aso, see oldfile_test.go),
// decoded and encoded again, gives the same bytes: the file's format has
// not changed.
func TestEncodeAsTheHandWrittenCodec(t *testing.T) {
	data, err := os.ReadFile("testdata/handwritten.aso")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'})
	transfers, locks := 0, 0
	for n, line := range lines[1:] {
		if bytes.HasPrefix(line, batchPrefix) {
			continue
		}
		var d anyDoc
		if err := decodeDoc(line, &d, nil); err != nil {
			if d.ID != "hand-added" {
				t.Fatalf("line %d: %v", n+2, err)
			}
			continue
		}
		var doc any = &d.Transfer
		if d.Type == state.LockDocType {
			doc = &state.LockDoc{ID: d.ID, Rev: d.Rev, Type: d.Type, User: d.User, Holder: d.Holder, Expire: d.Expire, Since: d.Since, LastRun: d.LastRun}
			locks++
		} else {
			transfers++
		}
		rec, spans, _, err := encodeBatch(nil, []any{doc})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec[spans[0].off : spans[0].off+int64(spans[0].n)]; !bytes.Equal(got, line) {
			t.Fatalf("line %d encodes differently:\n%s\nwant\n%s", n+2, got, line)
		}
	}
	if transfers < 15 || locks != 2 {
		t.Fatalf("the file holds %d transfer and %d lock versions", transfers, locks)
	}
}
