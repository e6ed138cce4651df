package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseFlags_FTSLatency: -fts-latency reaches the options, and a
// negative one is a usage error that names the flag.
func TestParseFlags_FTSLatency(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-aso", self, "-fts-latency", "300ms"})
	if err != nil || o.ftsLatency != 300*time.Millisecond {
		t.Errorf("-fts-latency 300ms: %v, %v; want 300ms", o.ftsLatency, err)
	}
	if o, err = parseFlags([]string{"-aso", self}); err != nil || o.ftsLatency != 0 {
		t.Errorf("no -fts-latency: %v, %v; want 0", o.ftsLatency, err)
	}
	if _, err = parseFlags([]string{"-aso", self, "-fts-latency", "-1s"}); err == nil || !strings.Contains(err.Error(), "-fts-latency") {
		t.Errorf("-fts-latency -1s: %v, want an error naming the flag", err)
	}
}

// TestParseFlags_Repeat: -repeat reaches the options (1 by default), and
// less than one run is a usage error that names the flag.
func TestParseFlags_Repeat(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if o, err := parseFlags([]string{"-aso", self}); err != nil || o.repeat != 1 {
		t.Errorf("no -repeat: %d, %v; want 1", o.repeat, err)
	}
	if o, err := parseFlags([]string{"-aso", self, "-repeat", "5"}); err != nil || o.repeat != 5 {
		t.Errorf("-repeat 5: %d, %v; want 5", o.repeat, err)
	}
	if _, err := parseFlags([]string{"-aso", self, "-repeat", "0"}); err == nil || !strings.Contains(err.Error(), "-repeat") {
		t.Errorf("-repeat 0: %v, want an error naming the flag", err)
	}
}

// TestMedianRun: the run of median agent/ref is kept (the lower middle one
// of an even count) with every run's agent/ref in run order; a failed run
// is kept over any other; a single run carries no list.
func TestMedianRun(t *testing.T) {
	run := func(drain, ratio float64) Run { return Run{DrainSeconds: drain, Ratio: ratio} }
	for _, c := range []struct {
		name      string
		runs      []Run
		wantDrain float64
		wantList  []float64
	}{
		{"one", []Run{run(10, 1.3)}, 10, nil},
		{"odd", []Run{run(12, 1.3), run(10, 1.1), run(11, 1.2)}, 11, []float64{1.3, 1.1, 1.2}},
		{"even", []Run{run(12, 1.4), run(10, 1.1), run(13, 1.5), run(11, 1.2)}, 11, []float64{1.4, 1.1, 1.5, 1.2}},
		{"failed", []Run{run(12, 1.3), {Error: "boom"}}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := medianRun(c.runs)
			if got.DrainSeconds != c.wantDrain || !slices.Equal(got.Ratios, c.wantList) {
				t.Errorf("medianRun = drain %v ratios %v, want drain %v ratios %v", got.DrainSeconds, got.Ratios, c.wantDrain, c.wantList)
			}
			if c.name == "failed" && got.Error != "boom" {
				t.Errorf("medianRun kept %+v, want the failed run", got)
			}
		})
	}
}
