package state_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func TestTime_JSONRoundTrip(t *testing.T) {
	in := time.Date(2026, 7, 8, 9, 10, 11, 123456789, time.FixedZone("CEST", 2*3600))
	b, err := json.Marshal(state.At(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-07-08T07:10:11.123456Z"`; got != want {
		t.Fatalf("encoded %s, want %s (UTC, microseconds)", got, want)
	}
	var back state.Time
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(in.Truncate(time.Microsecond)) || back.Location() != time.UTC {
		t.Fatalf("decoded %v, want %v in UTC", back, in)
	}
	for _, zero := range []string{`null`, `""`} {
		z := state.At(in)
		if err := json.Unmarshal([]byte(zero), &z); err != nil || !z.IsZero() {
			t.Fatalf("%s decodes to %v, %v; want the zero Time", zero, z, err)
		}
	}
	if b, _ := json.Marshal(state.Time{}); string(b) != "null" {
		t.Fatalf("zero Time encodes as %s", b)
	}
	if state.At(time.Time{}).String() != "" || !state.At(time.Time{}).IsZero() {
		t.Fatal("At of the zero time is not zero")
	}
	var other state.Time
	if err := json.Unmarshal([]byte(`"2026-07-08T09:10:11+02:00"`), &other); err != nil || !other.Equal(time.Date(2026, 7, 8, 7, 10, 11, 0, time.UTC)) {
		t.Fatalf("RFC 3339 with an offset: %v, %v", other, err)
	}
	for _, bad := range []string{`12`, `"yesterday"`, `"2026-13-01T00:00:00Z"`, `"`} {
		if err := json.Unmarshal([]byte(bad), &other); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
}

// TestTime_StringOrderIsTimeOrder: CouchDB compares timestamps as strings.
func TestTime_StringOrderIsTimeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := []time.Time{base, base.Add(time.Microsecond), base.Add(time.Second), base.Add(-time.Microsecond), base.Add(9 * time.Hour), base.AddDate(1, 0, 0)}
	for i := 0; i < 200; i++ {
		ts = append(ts, base.Add(time.Duration(rng.Int64N(int64(400*24*time.Hour)))-200*24*time.Hour))
	}
	for _, a := range ts {
		for _, b := range ts[:20] {
			ta, tb := state.At(a), state.At(b)
			if got, want := ta.String() < tb.String(), ta.Before(tb.Time); got != want {
				t.Fatalf("%s < %s is %v as strings, %v as times", ta, tb, got, want)
			}
			if len(ta.String()) != len(state.TimeLayout) {
				t.Fatalf("%s is not fixed width", ta)
			}
		}
	}
}
