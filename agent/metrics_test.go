package agent_test

import (
	"testing"

	"github.com/asyncstageout/aso/agent"
)

// TestFailureClass: reasons as FTS gives them (see the FTS3 reference)
// reduce to their scope and errno.
func TestFailureClass(t *testing.T) {
	for reason, want := range map[string]string{
		"SOURCE [5] Source and user-defined ADLER32 checksum do not match (0a1b2c3d != 0a1b2c3e)": "SOURCE [5]",
		"DESTINATION [17] Destination file exists and overwrite is not enabled":                   "DESTINATION [17]",
		"TRANSFER [110] TRANSFER  Operation timed out (copy)":                                     "TRANSFER [110]",
		"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts":                           "SOURCE [2]",
		"DESTINATION [13] Result HTTP 403 : Permission refused":                                   "DESTINATION [13]",
		"dependency 1234 failed": "other",
		"":                       "other",
	} {
		if got := agent.FailureClass(reason); got != want {
			t.Errorf("FailureClass(%q) = %q, want %q", reason, got, want)
		}
	}
}
