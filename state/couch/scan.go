package couch

import "encoding/json"

// The top-level scan of a transfer document. Every document the agent reads
// goes through extraFields, to learn which fields aso does not know;
// decoding it a second time into a map would cost as much as decoding it
// into a state.Transfer. The scan walks the top-level keys and skips their
// values without building anything, so a document with only known fields
// costs no allocation at all.

// eachField calls f with each top-level key of the JSON object raw (as it
// is written, without its quotes) and its raw value. It returns false if raw
// is not an object it can walk (the caller then decodes it the slow way);
// keys are reported as written, so a caller must check them (plainKey).
func eachField(raw []byte, f func(key, value []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return false
		}
		end := skipString(raw, i)
		if end < 0 {
			return false
		}
		key := raw[i+1 : end-1]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend < 0 {
			return false
		}
		f(key, raw[i:vend])
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value that starts at b[i], or -1.
// Objects and arrays are skipped by counting brackets outside strings.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// extraFields returns the top-level fields of raw that aso does not know
// (nil if none). Fields starting with "_" are CouchDB's own (_conflicts,
// _attachments, ...) and are never written back as data.
func extraFields(raw json.RawMessage) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	slow := false
	ok := eachField(raw, func(key, value []byte) {
		switch {
		case slow || len(key) > 0 && key[0] == '_' || knownFields[string(key)]:
		case !plainKey(key):
			slow = true // an escaped or non-ASCII key: let the decoder read it
		default:
			if extra == nil {
				extra = make(map[string]json.RawMessage)
			}
			extra[string(key)] = append(json.RawMessage(nil), value...)
		}
	})
	if !ok || slow {
		return extraFieldsSlow(raw)
	}
	return extra
}

// plainKey reports whether a key means what its bytes say: ASCII without
// escapes (the decoder unquotes escapes and replaces invalid UTF-8).
func plainKey(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= 0x80 || c < 0x20 {
			return false
		}
	}
	return true
}
