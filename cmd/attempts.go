package cmd

import (
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// submissions counts the times t was submitted to FTS, from its history
// (each move to submitted); atLeast is set when the history was cut
// (state.MaxHistory keeps the newest entries), so that there may have been
// more. A transfer's attempts field counts something else: its failed
// attempts, against --max-attempts, which aso retry resets.
func submissions(t *state.Transfer) (n int, atLeast bool) {
	for _, h := range t.History {
		if h.To == state.StateSubmitted && h.From != state.StateSubmitted {
			n++
		}
	}
	return n, len(t.History) >= state.MaxHistory
}

// submissionsText writes the submissions of t: "2", or "2+" when the
// history was cut.
func submissionsText(t *state.Transfer) string {
	n, atLeast := submissions(t)
	if atLeast {
		return fmt.Sprintf("%d+", n)
	}
	return fmt.Sprint(n)
}
