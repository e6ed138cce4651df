package state_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/asyncstageout/aso/state"
)

func TestReasonClass(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SOURCE [5] Source and user-defined ADLER32 checksum do not match (81936592 != 8193656d)", "SOURCE [5] Source and user-defined ADLER32 checksum do not match"},
		{"TRANSFER [110] Connection timed out (after 3 attempts)", "TRANSFER [110] Connection timed out"},
		{"dependency " + state.TransferID("u", "a", "/a", "b", "/b") + " is failed", "dependency <transfer> is failed"},
		{"FTS job 6f3a1c2e-1b2c-5d4e-8f9a-0123456789ab was lost (404 Not Found)", "FTS job <job> was lost"},
		{"", "(no reason)"},
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", "DESTINATION [17] Destination file exists and overwrite is not enabled"},
		// what the agent adds after reading the file at the destination
		{"DESTINATION [17] Destination file exists and overwrite is not enabled; the file there differs (53537 bytes, not 40667)",
			"DESTINATION [17] Destination file exists and overwrite is not enabled; the file there differs"},
		{"SOURCE [2] No such file or directory; the file at the destination could not be checked, so it was left in place (srm: gfal-stat davs://se.example/store/f.root: storage down)",
			"SOURCE [2] No such file or directory; the file at the destination could not be checked, so it was left in place"},
	} {
		if got := state.ReasonClass(c.in); got != c.want {
			t.Errorf("ReasonClass(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestReasonClass_CutsBetweenCharacters: a long reason is cut to at most
// 200 bytes, never inside a multi-byte character.
func TestReasonClass_CutsBetweenCharacters(t *testing.T) {
	long := strings.Repeat("a", 199) + "é" + strings.Repeat("b", 10)
	if got, want := state.ReasonClass(long), strings.Repeat("a", 199)+"..."; got != want {
		t.Fatalf("ReasonClass of a long reason = %q, want %q", got, want)
	}
	if got := state.ReasonClass(strings.Repeat("x", 300)); len(got) != 203 || !utf8.ValidString(got) {
		t.Fatalf("ReasonClass of 300 bytes = %d bytes %q", len(got), got)
	}
}
