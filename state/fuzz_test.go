package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// jsonFields lists the JSON names of the fields of v's type (and of the
// types it embeds), which a ValidationError must name.
func jsonFields(v any) map[string]bool {
	out := map[string]bool{"checksums.adler32": true}
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}

// wantNamedField fails unless err is a *state.ValidationError that wraps
// state.ErrInvalid and names one of fields.
func wantNamedField(t *testing.T, err error, fields map[string]bool) {
	t.Helper()
	var ve *state.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("rejection %v (%T) is not a ValidationError wrapping ErrInvalid", err, err)
	}
	if !fields[ve.Field] || ve.Reason == "" || !strings.Contains(err.Error(), ve.Field) {
		t.Fatalf("rejection %q names field %q (reason %q): want a field of the document and a reason", err, ve.Field, ve.Reason)
	}
}

// roundTrip encodes t, decodes it again, and fails unless the encoding is
// stable and the decoded transfer equals t and validates the same way.
func roundTrip(t *testing.T, tr state.Transfer) {
	t.Helper()
	b1, err := json.Marshal(tr)
	if err != nil {
		t.Fatalf("encode a decoded transfer: %v", err)
	}
	var back state.Transfer
	if err := json.Unmarshal(b1, &back); err != nil {
		t.Fatalf("a transfer does not decode from its own encoding: %v\n%s", err, b1)
	}
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
	}
	if e1, e2 := tr.Validate(), back.Validate(); (e1 == nil) != (e2 == nil) {
		t.Fatalf("validation changed across a round trip: %v, then %v\n%s", e1, e2, b1)
	}
}

// FuzzTransferJSON decodes a stored transfer document as every backend
// does (json.Unmarshal then Validate). Invariants: no panic; a rejection
// names a field of the document; a document that decodes survives an
// encode/decode round trip unchanged, and so does its validity.
func FuzzTransferJSON(f *testing.F) {
	fields := jsonFields(state.Transfer{})
	good := state.NewTransfer(state.Request{
		User: "alice", Source: "T2_A", Destination: "T1_B", SourceLFN: "/store/a b;ü.root", DestinationLFN: "/store/b",
		Size: 10, Checksums: map[string]string{"ADLER32": "0A1B2C3D"},
	}, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), "fuzz")
	b, _ := json.Marshal(good)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tr state.Transfer
		if err := json.Unmarshal(data, &tr); err != nil {
			var te *json.UnmarshalTypeError
			isObject := bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
			if errors.As(err, &te) && isObject && (te.Field == "" || !strings.Contains(err.Error(), te.Field)) {
				t.Fatalf("type error %q does not name its field", err)
			}
			return
		}
		if err := tr.Validate(); err != nil {
			wantNamedField(t, err, fields)
		}
		roundTrip(t, tr)
	})
}

// FuzzRequestJSON decodes a request as `aso enqueue` and Enqueue see it.
// Invariants: a rejection names a request field; a valid request makes a
// valid transfer document (the one stored), which round-trips.
func FuzzRequestJSON(f *testing.F) {
	fields := jsonFields(state.Request{})
	f.Add([]byte(`{"user":"u","source":"A","destination":"B","source_lfn":"/a","destination_lfn":"/b","size":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r state.Request
		if json.Unmarshal(data, &r) != nil {
			return
		}
		if err := r.Validate(); err != nil {
			wantNamedField(t, err, fields)
			return
		}
		tr := state.NewTransfer(r, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "fuzz")
		if err := tr.Validate(); err != nil {
			t.Fatalf("valid request %s made an invalid transfer: %v", data, err)
		}
		if tr.ID != r.ID() || tr.State != state.StateNew {
			t.Fatalf("transfer %s in state %s, want %s new", tr.ID, tr.State, r.ID())
		}
		roundTrip(t, tr)
	})
}
