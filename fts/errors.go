package fts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors; an *HTTPError unwraps to the one matching its status code.
var (
	// ErrNotFound: the job (or delegation, file) is unknown to the server (404).
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a job with the same sid was already submitted (409).
	ErrDuplicate = errors.New("duplicate submission")
	// ErrNeedDelegation: the server holds no valid delegated proxy (419).
	ErrNeedDelegation = errors.New("delegation needed")
	// ErrUnauthorized: the server did not accept the credentials (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the credentials are not allowed to do this (403).
	ErrForbidden = errors.New("forbidden")
	// ErrBadRequest: the server rejected the request as malformed (400, 405, 413).
	ErrBadRequest = errors.New("bad request")
	// ErrServer: the server failed (5xx) or throttled the client (429).
	ErrServer = errors.New("server error")
	// ErrTimeout: a request did not complete within Config.Timeout.
	ErrTimeout = errors.New("timeout")
)

// HTTPError is a reply with an error status. Message is the server's own
// explanation, extracted from its JSON or HTML error body and truncated.
type HTTPError struct {
	StatusCode int
	Message    string
}

// Error formats the status code and the server's message.
func (e *HTTPError) Error() string {
	text := http.StatusText(e.StatusCode)
	if e.StatusCode == 419 {
		text = "Authentication Timeout"
	}
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d %s", e.StatusCode, text)
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.StatusCode, text, e.Message)
}

// Unwrap returns the sentinel error for the status code, or nil.
func (e *HTTPError) Unwrap() error {
	switch c := e.StatusCode; {
	case c == http.StatusNotFound:
		return ErrNotFound
	case c == http.StatusConflict:
		return ErrDuplicate
	case c == 419:
		return ErrNeedDelegation
	case c == http.StatusUnauthorized:
		return ErrUnauthorized
	case c == http.StatusForbidden:
		return ErrForbidden
	case c == http.StatusBadRequest, c == http.StatusMethodNotAllowed, c == http.StatusRequestEntityTooLarge:
		return ErrBadRequest
	case c == http.StatusRequestTimeout:
		return ErrTimeout
	case c >= 500, c == http.StatusTooManyRequests:
		return ErrServer
	}
	return nil
}

// DuplicateError is returned by Submit when the server already has a job for
// the submission's sid (409). JobID is that job's deterministic id, so the
// caller can adopt it instead of submitting again.
type DuplicateError struct {
	SID     string
	JobID   string
	Message string
}

// Error says which sid was duplicated and which job holds it.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("fts: submit: sid %s already submitted as job %s: %s", e.SID, e.JobID, e.Message)
}

// Unwrap makes errors.Is(err, ErrDuplicate) true.
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// IsTransient reports whether err may go away by itself: a network error, a
// timeout, a 5xx or a 429 reply. A cancelled context, a 4xx reply, a TLS
// certificate problem or a credential problem is not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var he *HTTPError
	if errors.As(err, &he) {
		c := he.StatusCode
		return c >= 500 || c == http.StatusTooManyRequests || c == http.StatusRequestTimeout
	}
	if errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ce *credentialError
	if isCertificateError(err) || errors.As(err, &ce) {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, errTransport)
}

// credentialError is a local credential problem (expired proxy, unreadable
// token): never transient.
type credentialError struct{ err error }

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

func credErrorf(format string, args ...any) error {
	return &credentialError{err: fmt.Errorf(format, args...)}
}

// errTransport marks failures to exchange a request and its reply.
var errTransport = errors.New("request failed")

func isCertificateError(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var ae tls.AlertError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) ||
		errors.As(err, &ci) || errors.As(err, &ae) || isHandshakeRefusal(err)
}

// isHandshakeRefusal reports a TLS alert from the server, as when it does
// not accept the client certificate.
func isHandshakeRefusal(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// maxMessage bounds the server message kept in an error.
const maxMessage = 300

var (
	reParagraph = regexp.MustCompile(`(?is)<p[^>]*>(.*?)</p>`)
	reTitle     = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	reHeading   = regexp.MustCompile(`(?is)<h1[^>]*>(.*?)</h1>`)
	reTag       = regexp.MustCompile(`(?s)<[^>]*>`)
)

// errorMessage extracts the server's explanation from an error reply body:
// the JSON shapes {"status","message"} and {"job_id","http_status",
// "http_message"}, a bare JSON string, an HTML error page (werkzeug or
// Apache: the first <p>, else <h1> or <title>), or the first line of plain
// text. The result is one line of at most maxMessage bytes.
func errorMessage(body []byte) string {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return ""
	}
	switch trimmed[0] {
	case '{':
		var m struct {
			Message     *string `json:"message"`
			HTTPMessage *string `json:"http_message"`
			Status      *string `json:"status"`
			HTTPStatus  *string `json:"http_status"`
		}
		if json.Unmarshal([]byte(trimmed), &m) == nil {
			for _, s := range []*string{m.Message, m.HTTPMessage, m.Status, m.HTTPStatus} {
				if s != nil && strings.TrimSpace(*s) != "" {
					return clip(*s)
				}
			}
			return ""
		}
	case '"':
		var s string
		if json.Unmarshal([]byte(trimmed), &s) == nil {
			return clip(s)
		}
	case '<':
		for _, re := range []*regexp.Regexp{reParagraph, reHeading, reTitle} {
			for _, m := range re.FindAllStringSubmatch(trimmed, -1) {
				if text := htmlText(m[1]); text != "" {
					return clip(text)
				}
			}
		}
		return clip(htmlText(trimmed))
	}
	line, _, _ := strings.Cut(trimmed, "\n")
	return clip(line)
}

func htmlText(s string) string {
	return strings.TrimSpace(html.UnescapeString(reTag.ReplaceAllString(s, " ")))
}

// clip makes s one line of valid UTF-8 of at most maxMessage bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// statusCode reads the code of an FTS "http_status" value like "404 Not Found".
func statusCode(httpStatus string) int {
	code, _, _ := strings.Cut(strings.TrimSpace(httpStatus), " ")
	n, err := strconv.Atoi(code)
	if err != nil {
		return 0
	}
	return n
}
