package cmd

import (
	"fmt"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// submissions counts the times t was submitted to FTS (see
// statusview.Submissions).
func submissions(t *state.Transfer) (n int, atLeast bool) { return statusview.Submissions(t) }

// submissionsText writes the submissions of t: "2", or "2+" when the
// history was cut.
func submissionsText(t *state.Transfer) string {
	n, atLeast := submissions(t)
	if atLeast {
		return fmt.Sprintf("%d+", n)
	}
	return fmt.Sprint(n)
}
