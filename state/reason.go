package state

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxReasonClass bounds the bytes of a reason class (before its "...").
const maxReasonClass = 200

var (
	reasonDetail = regexp.MustCompile(`\s*\([^()]*\)`)
	reasonID     = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	reasonJob    = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
)

// ReasonClass reduces a failure reason to its class, so that reasons can be
// counted: parenthesised details (checksums, attempt counts), transfer IDs
// and FTS job IDs are dropped. "SOURCE [5] Source and user-defined ADLER32
// checksum do not match (1 != 2) (after 3 attempts)" becomes "SOURCE [5]
// Source and user-defined ADLER32 checksum do not match".
func ReasonClass(reason string) string {
	r := reasonDetail.ReplaceAllString(reason, "")
	r = reasonID.ReplaceAllString(r, "<transfer>")
	r = reasonJob.ReplaceAllString(r, "<job>")
	r = strings.TrimSpace(r)
	if len(r) > maxReasonClass {
		n := maxReasonClass
		for n > 0 && !utf8.RuneStart(r[n]) {
			n-- // cut between characters, never inside one
		}
		r = r[:n] + "..."
	}
	if r == "" {
		return "(no reason)"
	}
	return r
}
