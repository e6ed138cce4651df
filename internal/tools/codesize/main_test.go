package main

import "testing"

// TestCodeLines: blank lines and comment-only lines are not code; a line
// with code and a comment is; every line of a raw string is.
func TestCodeLines(t *testing.T) {
	src := "// Package p is documented.\npackage p\n\n/* a block\ncomment */\nvar s = `one\n\ntwo`\n\nfunc f() int { // trailing\n\treturn 1 /* inline */\n}\n"
	if got, want := CodeLines([]byte(src)), 6; got != want {
		t.Errorf("CodeLines = %d, want %d (package, the two non-blank lines of var s, func, return, })", got, want)
	}
}

// TestIsHarness: test support is known by a path element ending in test.
func TestIsHarness(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/asyncstageout/aso/state/couch/couchtest": true,
		"github.com/asyncstageout/aso/internal/proctest":     true,
		"github.com/asyncstageout/aso/internal/testsupport":  true,
		"github.com/asyncstageout/aso/state/couch":           false,
		"github.com/asyncstageout/aso/internal/statusview":   false,
	} {
		if got := IsHarness(path); got != want {
			t.Errorf("IsHarness(%s) = %v, want %v", path, got, want)
		}
	}
}
