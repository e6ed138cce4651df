package fts

import (
	"strconv"
	"strings"
)

// The scopes of a failure reason: which side of the transfer failed.
const (
	ScopeSource      = "SOURCE"
	ScopeDestination = "DESTINATION"
	ScopeTransfer    = "TRANSFER"
	ScopeGeneral     = "GENERAL_FAILURE"
)

// Reason is an FTS failure reason split into its parts. A reason as FTS
// stores it reads "<SCOPE> [<errno>] <message>"; older servers wrote
// "<SCOPE> error during <PHASE> phase: [<CATEGORY>] <message>", and some
// reasons (queue expiry, cancel, stalled transfers) have no prefix at all:
// then Scope and Errno are empty and Message is the whole reason.
//
// The codes are the structure a gfal2 plugin puts in its message: the HTTP
// status of the HTTP/Davix plugin ("HTTP 404 : File not found"), libcurl's
// error number ("curl error (56)"), the XRootD server's error code
// ("Server responded with an error: [3011]"), the SRM status
// ("SRM_INVALID_PATH") and the FTP reply code of GridFTP ("responded with
// an error 452"). Each is 0 or "" when the message has none.
type Reason struct {
	Scope   string
	Errno   int
	Message string
	// Phase and Category are those of the older format, else "".
	Phase    string
	Category string

	HTTPStatus int
	CurlCode   int
	XRootDCode int
	FTPCode    int
	SRMStatus  string
}

// ParseReason splits an FTS failure reason into its parts. It never fails:
// a reason it cannot split is all Message.
func ParseReason(s string) Reason {
	r := Reason{Message: strings.TrimSpace(s)}
	if scope, rest, ok := cutScope(r.Message); ok {
		switch {
		case strings.HasPrefix(rest, "["):
			if n, msg, ok := cutBracketNumber(rest); ok {
				r.Scope, r.Errno, r.Message = scope, n, strings.TrimSpace(msg)
			}
		case strings.HasPrefix(rest, "error during "):
			phase, after, ok := strings.Cut(strings.TrimPrefix(rest, "error during "), " phase:")
			after = strings.TrimSpace(after)
			if ok && isUpperWord(phase) && strings.HasPrefix(after, "[") {
				if cat, msg, ok := strings.Cut(after[1:], "]"); ok && isUpperWord(cat) {
					r.Scope, r.Phase, r.Category, r.Message = scope, phase, cat, strings.TrimSpace(msg)
				}
			}
		}
	}
	r.HTTPStatus = codeAfter(r.Message, "HTTP ", 3)
	r.CurlCode = codeAfter(r.Message, "curl error (", 0)
	r.XRootDCode = codeAfter(r.Message, "responded with an error: [", 4)
	r.FTPCode = codeAfter(r.Message, "responded with an error ", 3)
	r.SRMStatus = srmStatus(r.Message)
	return r
}

// cutScope splits a reason that starts with a scope word and a space.
func cutScope(s string) (scope, rest string, ok bool) {
	for _, sc := range [...]string{ScopeSource, ScopeDestination, ScopeTransfer, ScopeGeneral} {
		if after, found := strings.CutPrefix(s, sc); found && strings.HasPrefix(after, " ") {
			return sc, strings.TrimLeft(after, " "), true
		}
	}
	return "", "", false
}

// cutBracketNumber reads "[digits]" at the start of s (at most 6 digits:
// errnos are small) and returns the number and what follows.
func cutBracketNumber(s string) (int, string, bool) {
	end := strings.IndexByte(s, ']')
	if end < 2 || end > 7 {
		return 0, "", false
	}
	n, err := strconv.Atoi(s[1:end])
	if err != nil || n < 0 || s[1] == '+' || s[1] == '-' {
		return 0, "", false
	}
	return n, s[end+1:], true
}

func isUpperWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// codeAfter returns the number that follows the last occurrence of marker
// in msg (the last: plugins prefix their own message to the storage's),
// when it has exactly digits digits (any count from 1 to 4 when digits is
// 0), else 0.
func codeAfter(msg, marker string, digits int) int {
	for end := len(msg); ; {
		i := strings.LastIndex(msg[:end], marker)
		if i < 0 {
			return 0
		}
		j := i + len(marker)
		k := j
		for k < len(msg) && k-j < 5 && msg[k] >= '0' && msg[k] <= '9' {
			k++
		}
		n := k - j
		boundary := k == len(msg) || msg[k] < '0' || msg[k] > '9'
		if boundary && (digits == 0 && n >= 1 && n <= 4 || n == digits) {
			v, _ := strconv.Atoi(msg[j:k])
			return v
		}
		end = i
	}
}

// srmStatus returns the first SRM status code ("SRM_" and capitals) in msg
// other than the generic SRM_FAILURE, or "".
func srmStatus(msg string) string {
	rest := msg
	for {
		i := strings.Index(rest, "SRM_")
		if i < 0 {
			return ""
		}
		j := i + 4
		for j < len(rest) && (rest[j] >= 'A' && rest[j] <= 'Z' || rest[j] == '_') {
			j++
		}
		if code := rest[i:j]; j > i+4 && code != "SRM_FAILURE" && (i == 0 || !isWordByte(rest[i-1])) {
			return code
		}
		rest = rest[j:]
	}
}

func isWordByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}
