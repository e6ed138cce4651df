package ranges_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/ranges"
)

// TestRange_Check: a value is in range from Min to Max inclusive, or one
// of the special values; everything else is refused, naming the range.
func TestRange_Check(t *testing.T) {
	lock, _ := ranges.Of("run", "lock-ttl")
	retry, _ := ranges.Of("run", "fts-retry")
	runtime, _ := ranges.Of("run", "max-runtime")
	rmBatch, _ := ranges.Of("rm", "batch-size")
	runBatch, _ := ranges.Of("run", "batch-size")
	for _, c := range []struct {
		r    ranges.Range
		v    float64
		want string // "" for in range
	}{
		{lock, float64(time.Second), ""},
		{lock, float64(24 * time.Hour), ""},
		{lock, float64(time.Millisecond), "out of range: want 1s to 24h"},
		{lock, float64(25 * time.Hour), "out of range: want 1s to 24h"},
		{retry, -1, ""},
		{retry, 0, ""},
		{retry, -2, "out of range: want 1 to 10; 0: the server's default; -1: none"},
		{runtime, 0, ""},
		{runtime, float64(1000 * time.Hour), ""},
		{runtime, float64(time.Millisecond), "out of range: want at least 1s; 0: no limit"},
		{rmBatch, 20_000, "out of range: want 1 to 10000"},
		{runBatch, 20_000, ""},
	} {
		err := c.r.Check(c.v)
		if got := errText(err); got != c.want {
			t.Errorf("%s: Check(%v) = %q, want %q", c.r, c.v, got, c.want)
		}
	}
	if _, ok := ranges.Of("run", "no-such-setting"); ok {
		t.Error("a setting with no range has one")
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
