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
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
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
		if err := json.Unmarshal(b, &s); err != nil {
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
		var v string
		err := json.Unmarshal(b, &v)
		*s = flexString(v)
		return err
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		return fmt.Errorf("expected a string, got %.40s", b)
	}
	*s = flexString(b)
	return nil
}
