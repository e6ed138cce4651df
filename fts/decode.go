package fts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The FTS server dumps database rows as JSON: any field may be null, times
// are naive UTC ("2024-01-02T03:04:05"), numbers may come as floats. These
// types read such values leniently and leave the zero value for null.

var null = []byte("null")

// ftsTime is a time in one of the layouts FTS servers have used.
type ftsTime struct{ time.Time }

var timeLayouts = []string{"2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05.999999"}

func (t *ftsTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, null) {
		return nil
	}
	s, err := unquote(b)
	if err != nil {
		return fmt.Errorf("time: %w", err)
	}
	if s == "" {
		return nil
	}
	for _, layout := range timeLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v.UTC()
			return nil
		}
	}
	return fmt.Errorf("time %q: not YYYY-MM-DDTHH:MM:SS", s)
}

// flexInt is an integer that may be null, a float with no fraction, or a
// numeric string.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	f, err := flexNumber(b)
	if err != nil {
		return err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return fmt.Errorf("number %s is not an integer", b)
	}
	*n = flexInt(f)
	return nil
}

// flexFloat is a float that may be null or a numeric string.
type flexFloat float64

func (n *flexFloat) UnmarshalJSON(b []byte) error {
	f, err := flexNumber(b)
	*n = flexFloat(f)
	return err
}

func flexNumber(b []byte) (float64, error) {
	if bytes.Equal(b, null) {
		return 0, nil
	}
	s := string(b)
	if strings.HasPrefix(s, `"`) {
		var err error
		if s, err = unquote(b); err != nil {
			return 0, err
		}
		if s == "" {
			return 0, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a number: %.40s", s)
	}
	return f, nil
}

// flexString is a string that may be null or a scalar of another type.
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, null):
		return nil
	case len(b) > 0 && b[0] == '"':
		v, err := unquote(b)
		*s = flexString(v)
		return err
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		return fmt.Errorf("expected a string, got %.40s", b)
	}
	*s = flexString(b)
	return nil
}

// unquote decodes the JSON string b. A status reply holds tens of thousands
// of plain strings (states, URLs, times): those, printable ASCII without
// escapes, are copied directly; anything else goes through encoding/json,
// so the result is always what encoding/json gives.
func unquote(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		plain := true
		for _, c := range b[1 : len(b)-1] {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			return string(b[1 : len(b)-1]), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// flexBool is a boolean that may be absent, null, a JSON boolean, the
// numbers 0 and 1 (a MySQL tinyint) or their strings; anything else is
// treated as absent rather than failing the whole reply.
type flexBool struct {
	set, v bool
}

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true", "1", `"1"`, `"true"`:
		*f = flexBool{true, true}
	case "false", "0", `"0"`, `"false"`:
		*f = flexBool{true, false}
	default:
		*f = flexBool{}
	}
	return nil
}

// ptr returns the value, or nil when absent.
func (f flexBool) ptr() *bool {
	if !f.set {
		return nil
	}
	v := f.v
	return &v
}
