package couch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// knownFields are the top-level fields the codec reads into state.Transfer
// (by their JSON names), plus claim_key, a derived field earlier versions
// wrote and that the view no longer reads: it is dropped on the next write.
var knownFields = func() map[string]bool {
	m := map[string]bool{"claim_key": true}
	rt := reflect.TypeFor[state.Transfer]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// encode returns the stored form of t: its fields and then those of
// t.Extra, which replace a field of the same name (see salvage).
func encode(t *state.Transfer) (json.RawMessage, error) {
	t.Type = state.DocType
	b, err := marshalAsIs(t)
	if err == nil && len(t.Extra) > 0 {
		var m map[string]json.RawMessage
		if err = json.Unmarshal(b, &m); err == nil {
			maps.Copy(m, t.Extra)
			b, err = marshalAsIs(m)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("couch: encode transfer %s: %w", t.ID, err)
	}
	return b, nil
}

// marshalAsIs encodes v as json.Marshal does but without escaping <, >
// and &, which json.Marshal would also do inside the unknown fields' raw
// values: they are written back byte for byte.
func marshalAsIs(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decode parses and validates a stored transfer document; the fields aso
// does not know go into Extra. The error says why the document cannot be
// trusted; it wraps state.ErrInvalid.
func decode(raw json.RawMessage) (state.Transfer, error) {
	var t state.Transfer
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("%s: %w", strings.TrimPrefix(err.Error(), "json: "), state.ErrInvalid)
	}
	if err := t.Validate(); err != nil {
		return t, err
	}
	t.Extra = compactValues(extraFields(raw))
	return t, nil
}

// compactValues removes the insignificant white space of each value of m,
// in place, so that an unknown field reads the same before and after aso
// writes it (encoding/json writes a raw value compacted).
func compactValues(m map[string]json.RawMessage) map[string]json.RawMessage {
	for k, v := range m {
		if bytes.ContainsAny(v, " \t\r\n") {
			var b bytes.Buffer
			if json.Compact(&b, v) == nil {
				m[k] = b.Bytes()
			}
		}
	}
	return m
}

// extraFieldsSlow is extraFields by a full decode into a map: for a
// document whose keys the scan cannot take as written.
func extraFieldsSlow(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var extra map[string]json.RawMessage
	for k, v := range m {
		if knownFields[k] || strings.HasPrefix(k, "_") {
			continue
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[k] = v
	}
	return extra
}

// salvage reads a transfer document that decode refused so that it can be
// moved to failed without losing anything: each field that decodes goes
// into the transfer, each that does not stays raw in Extra, which encode
// writes over the field of the same name. ok is false for a document that
// is not a JSON object with a string _id.
func salvage(raw json.RawMessage) (t state.Transfer, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return t, false
	}
	for k, v := range m {
		if k == "claim_key" || strings.HasPrefix(k, "_") && k != "_id" && k != "_rev" {
			continue
		}
		if knownFields[k] {
			one, err := json.Marshal(map[string]json.RawMessage{k: v})
			if err == nil && json.Unmarshal(one, &t) == nil {
				continue
			}
		}
		if t.Extra == nil {
			t.Extra = make(map[string]json.RawMessage)
		}
		t.Extra[k] = v
	}
	compactValues(t.Extra)
	_, stringID := t.Extra["_id"]
	return t, t.ID != "" && !stringID
}

// docKind tells what a stored document is.
type docKind int

const (
	kindOther    docKind = iota // design, local, lock or another application's document
	kindTransfer                // claims to be a transfer
	kindUnknown                 // has no usable type: reported as invalid
)

// envelope reads the fields every document kind shares.
type envelope struct {
	ID   string          `json:"_id"`
	Type json.RawMessage `json:"type"`
}

func classify(raw json.RawMessage) (envelope, docKind) {
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, kindUnknown
	}
	if strings.HasPrefix(e.ID, "_design/") || strings.HasPrefix(e.ID, "_local/") || state.IsLockID(e.ID) {
		return e, kindOther
	}
	var typ string
	if err := json.Unmarshal(e.Type, &typ); err != nil || len(e.Type) == 0 {
		return e, kindUnknown
	}
	if typ == state.DocType {
		return e, kindTransfer
	}
	return e, kindOther
}

// invalidDoc describes a document that does not decode as a transfer.
func invalidDoc(raw json.RawMessage, err error) state.InvalidDoc {
	e, kind := classify(raw)
	reason := "not a transfer document: no string \"type\" field"
	if kind == kindTransfer && err != nil {
		reason = err.Error()
	}
	return state.InvalidDoc{ID: e.ID, Reason: reason}
}

// sameContent reports whether two documents are equal apart from _rev: a
// write whose response was lost and that the server nonetheless applied.
func sameContent(a, b json.RawMessage) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, "_rev")
	delete(mb, "_rev")
	return reflect.DeepEqual(ma, mb)
}
