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

// TestMedianRun: the figures are the medians of each series (drain, CPU,
// RSS, each reference), the limit the fastest median reference, the ratios
// those of the medians, with every run's drain and ratios in run order; a
// failed run is kept over any other; a single run is kept as it is.
func TestMedianRun(t *testing.T) {
	run := func(drain, cpu, seq, pipe float64) Run {
		r := Run{N: 100, DrainSeconds: drain, CPUSeconds: cpu, References: []RefResult{{Name: "seq", Seconds: seq}, {Name: "pipe", InFlight: 2, Seconds: pipe}}}
		r.setLimit()
		return r
	}
	for _, c := range []struct {
		name                   string
		runs                   []Run
		drain, cpu, seq, limit float64
		limitName              string
		drains                 []float64
	}{
		{"one", []Run{run(10, 2, 8, 9)}, 10, 2, 8, 8, "seq", nil},
		{"odd", []Run{run(12, 3, 10, 8), run(10, 1, 9, 7), run(11, 2, 8, 9)}, 11, 2, 9, 8, "pipe", []float64{12, 10, 11}},
		{"even", []Run{run(12, 4, 10, 5), run(10, 1, 6, 7), run(13, 3, 8, 9), run(11, 2, 7, 6)}, 11.5, 2.5, 7.5, 6.5, "pipe", []float64{12, 10, 13, 11}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := medianRun(c.runs)
			if got.DrainSeconds != c.drain || got.CPUSeconds != c.cpu || !slices.Equal(got.Drains, c.drains) {
				t.Errorf("medianRun: drain %v, CPU %v, drains %v; want %v, %v, %v", got.DrainSeconds, got.CPUSeconds, got.Drains, c.drain, c.cpu, c.drains)
			}
			if got.ReferenceSeconds != c.seq || got.LimitSeconds != c.limit || got.Limit != c.limitName {
				t.Errorf("medianRun: sequential %v, limit %v (%s); want %v, %v (%s)", got.ReferenceSeconds, got.LimitSeconds, got.Limit, c.seq, c.limit, c.limitName)
			}
			if got.Ratio != c.drain/c.seq || got.LimitRatio != c.drain/c.limit {
				t.Errorf("medianRun: ratios %v, %v; want %v, %v", got.Ratio, got.LimitRatio, c.drain/c.seq, c.drain/c.limit)
			}
			if len(c.runs) > 1 && (len(got.Ratios) != len(c.runs) || got.Ratios[0] != c.runs[0].Ratio || got.LimitRatios[0] != c.runs[0].LimitRatio) {
				t.Errorf("medianRun: per-run ratios %v, %v; want those of the runs in order", got.Ratios, got.LimitRatios)
			}
		})
	}
	failed := medianRun([]Run{run(12, 1, 10, 9), {Error: "boom"}})
	if failed.Error != "boom" {
		t.Errorf("medianRun kept %+v, want the failed run", failed)
	}
}
