package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// TimeLayout is the encoding of every timestamp: RFC 3339 in UTC with a fixed
// number of fractional digits, so that the string order of two timestamps is
// their time order (CouchDB sorts and compares them as strings).
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Time is a UTC timestamp with a fixed-width JSON encoding. The zero Time
// encodes as null and is dropped by `omitzero`.
type Time struct{ time.Time }

// At converts t to a Time in UTC, truncated to the encoded precision.
func At(t time.Time) Time {
	if t.IsZero() {
		return Time{}
	}
	return Time{t.UTC().Truncate(time.Microsecond)}
}

// String formats t with TimeLayout, or "" for the zero Time.
func (t Time) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// MarshalJSON encodes t with TimeLayout, or null when zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts null, "" or any RFC 3339 timestamp. A refusal is a
// *json.UnmarshalTypeError, so that encoding/json names the field it was
// decoding ("... into Go struct field Transfer.created ...").
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) || bytes.Equal(b, []byte(`""`)) {
		*t = Time{}
		return nil
	}
	refuse := func(why string) error {
		return &json.UnmarshalTypeError{Value: jsonKind(b) + " " + truncate(string(b), 40) + " (" + why + ")", Type: reflect.TypeOf(Time{})}
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return refuse("want an RFC 3339 timestamp string")
	}
	p, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return refuse("not an RFC 3339 timestamp")
	}
	if y := p.UTC().Year(); y < 0 || y > 9999 {
		// TimeLayout writes such a time with 5 digits or a sign, which
		// RFC 3339 (and so this method) refuses: the document would not
		// read back after its next write.
		return refuse(fmt.Sprintf("year %d in UTC is outside 0000-9999", y))
	}
	*t = At(p)
	return nil
}

// jsonKind names the kind of the JSON value b.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "value"
	case b[0] == '"':
		return "string"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}
