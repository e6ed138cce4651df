package state

import (
	"bytes"
	"fmt"
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

// UnmarshalJSON accepts null, "" or any RFC 3339 timestamp.
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) || bytes.Equal(b, []byte(`""`)) {
		*t = Time{}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("timestamp %s: not a JSON string", truncate(string(b), 40))
	}
	p, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("timestamp %s: not RFC 3339", truncate(string(b), 40))
	}
	if y := p.UTC().Year(); y < 0 || y > 9999 {
		// TimeLayout writes such a time with 5 digits or a sign, which
		// RFC 3339 (and so this method) refuses: the document would not
		// read back after its next write.
		return fmt.Errorf("timestamp %s: year %d in UTC is outside 0000-9999", truncate(string(b), 40), y)
	}
	*t = At(p)
	return nil
}
