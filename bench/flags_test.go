package main

import (
	"os"
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
