package couch

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// FuzzDecode decodes a stored CouchDB document as every call of the store
// does. Invariants: no panic; a refusal wraps state.ErrInvalid and, when
// listed in Summary.Invalid, carries the document's own _id and a reason;
// an accepted transfer is written back (encode) in a form that decodes to
// the same transfer, its unknown fields kept and no derived claim_key.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"_id":"x","type":"transfer","size":"big"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tr, err := decode(raw)
		env, kind := classify(raw)
		if err != nil {
			if !errors.Is(err, state.ErrInvalid) {
				t.Fatalf("refusal %v does not wrap state.ErrInvalid", err)
			}
			if kind == kindOther {
				return // not listed: a design, lock or foreign document
			}
			bad := invalidDoc(raw, err)
			if bad.Reason == "" || bad.ID != env.ID {
				t.Fatalf("listed as %+v, want ID %q and a reason", bad, env.ID)
			}
			var id struct {
				ID string `json:"_id"`
			}
			if json.Unmarshal(raw, &id) == nil && bad.ID != id.ID {
				t.Fatalf("listed under ID %q, but the document's _id is %q", bad.ID, id.ID)
			}
			return
		}
		if kind != kindTransfer {
			t.Fatalf("decode accepted a document classified %d: %s", kind, raw)
		}
		enc, err := encode(&tr)
		if err != nil {
			t.Fatalf("encode an accepted transfer: %v", err)
		}
		back, err := decode(enc)
		if err != nil {
			t.Fatalf("the written form of an accepted transfer is refused: %v\n%s", err, enc)
		}
		a, _ := json.Marshal(tr)
		b, _ := json.Marshal(back)
		if !bytes.Equal(a, b) {
			t.Fatalf("transfer changed across a write:\n%s\n%s", a, b)
		}
		if !reflect.DeepEqual(tr.Extra, back.Extra) {
			t.Fatalf("unknown fields changed across a write:\n%s\n%s", raw, enc)
		}
		if bytes.Contains(enc, []byte(`"claim_key"`)) {
			t.Fatalf("claim_key written: %s", enc)
		}
	})
}
