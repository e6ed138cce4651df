package ftssim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// submitError is a rejected submission: its HTTP code and FTS's message.
type submitError struct {
	code int
	msg  string
}

func badRequest(format string, args ...any) *submitError {
	return &submitError{400, fmt.Sprintf(format, args...)}
}

// valueError, typeError and keyError are the messages FTS gives for the
// Python ValueError, TypeError and KeyError of its JobBuilder.
func valueError(format string, args ...any) *submitError {
	return badRequest("Invalid value within the request: "+format, args...)
}

func typeError(format string, args ...any) *submitError {
	return badRequest("Malformed request: "+format, args...)
}

func keyError(key string) *submitError { return badRequest("Missing parameter: '%s'", key) }

// pyType names a JSON value's Python type, for messages.
func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case json.Number:
		return "int"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyInt converts like Python's int().
func pyInt(name string, v any) (int, *submitError) {
	switch t := v.(type) {
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return int(n), nil
		}
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return 0, valueError("invalid literal for int() with base 10: '%s'", t)
		}
		return int(f), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, valueError("invalid literal for int() with base 10: '%s'", t)
		}
		return n, nil
	}
	return 0, typeError("int() argument must be a string, a bytes-like object or a real number, not '%s' (%s)", pyType(v), name)
}

// safeInt is FTS's safe_int: int(v), or 0.
func safeInt(v any) int {
	n, err := pyInt("", v)
	if err != nil {
		return 0
	}
	return n
}

// truthy is Python truthiness.
func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case json.Number:
		f, _ := t.Float64()
		return f != 0
	case string:
		return t != ""
	case []any:
		return len(t) > 0
	case map[string]any:
		return len(t) > 0
	}
	return true
}

// safeFlag is FTS's safe_flag: a string is true when it starts with Y.
func safeFlag(v any) bool {
	if s, ok := v.(string); ok {
		return s != "" && (s[0] == 'Y' || s[0] == 'y')
	}
	return truthy(v)
}

// secondsFromValue is FTS's seconds_from_value for max_time_in_queue: an
// integer is hours; a string has an s, m, h or d suffix. ok is false for
// "no limit".
func secondsFromValue(v any) (int64, bool) {
	switch t := v.(type) {
	case json.Number:
		n, err := t.Int64()
		if err != nil || n == 0 {
			return 0, false
		}
		return n * 3600, true
	case string:
		if len(t) < 2 {
			return 0, false
		}
		n, err := strconv.ParseInt(t[:len(t)-1], 10, 64)
		if err != nil {
			return 0, false
		}
		mult := map[byte]int64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}[strings.ToLower(t[len(t)-1:])[0]]
		if mult == 0 {
			return 0, false
		}
		return n * mult, true
	}
	return 0, false
}

// metadataValue normalises file or job metadata: a string becomes
// {"label": s}.
func metadataValue(v any) any {
	if s, ok := v.(string); ok {
		return map[string]any{"label": s}
	}
	return v
}

// validateURL is FTS's validate_url; file:// is allowed (without a host)
// only in LocalFiles mode, and nothing else in LocalOnly mode.
func validateURL(raw string, o Options) (*url.URL, *submitError) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, valueError("%v", err)
	}
	switch {
	case u.Scheme == "":
		return nil, valueError("Missing scheme (%s)", raw)
	case u.Scheme != "file" && o.LocalFiles && o.LocalOnly:
		return nil, valueError("Can not transfer remote files: this in-process FTS simulator copies only file:// URLs; use a real FTS server (--fts https://HOST:8446) (%s)", raw)
	case u.Scheme == "file" && !o.LocalFiles:
		return nil, valueError("Can not transfer local files (%s)", raw)
	case u.Path == "" || (u.Path == "/" && u.RawQuery == ""):
		return nil, valueError("Missing path (%s)", raw)
	case u.Hostname() == "" && u.Scheme != "file":
		return nil, valueError("Missing host (%s)", raw)
	}
	return u, nil
}

// storageElement is scheme://host without the port.
func storageElement(u *url.URL) string {
	h := u.Hostname()
	if u.Scheme == "file" && h == "" {
		h = "localhost"
	}
	return u.Scheme + "://" + h
}

func isLocal(surl string) bool { return strings.HasPrefix(surl, "file:") }

// stringList reads a JSON array of strings.
func stringList(name string, v any) ([]string, *submitError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, typeError("'%s' must be a list of strings, not '%s'", name, pyType(v))
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, typeError("'%s' must be a list of strings, found '%s'", name, pyType(e))
		}
		out[i] = strings.TrimSpace(s)
	}
	return out, nil
}
