package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// TestExplain_Hints: every error class has its advice, and a failure whose
// reason is a storage's certificate (the structure of the reason: libcurl's
// code, else a refusal that says the certificate could not be verified)
// is explained as a certificate or CA problem, never as the quota or the
// permissions of the destination.
func TestExplain_Hints(t *testing.T) {
	for _, c := range state.ErrorClasses {
		if classHints[string(c)] == "" {
			t.Errorf("error class %s has no advice", c)
		}
	}
	now := time.Now()
	for _, reason := range []string{
		"DESTINATION [13] Result curl error (60): SSL peer certificate or SSH remote key was not OK after 1 attempts",
		"DESTINATION [13] Could not read status line: SSL error: certificate verify failed (self signed certificate in certificate chain)",
	} {
		f := fts.Classify(reason, nil)
		tr := state.Transfer{ID: strings.Repeat("ab", 32), State: state.StateFailed, Reason: reason, ErrorClass: string(f.Class), Attempts: 1,
			LastUpdate: state.At(now)}
		text := strings.Join(explain(&tr, nil, nil, now, time.Hour), " ")
		if !strings.Contains(text, "certificate") || !strings.Contains(text, "CA") || strings.Contains(text, "quota") {
			t.Errorf("%q (class %s) is explained as %q: want a certificate or CA problem, not the quota", reason, f.Class, text)
		}
	}
}
