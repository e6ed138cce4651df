package enqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// errMalformed stops the walk of input that is not well-formed JSON,
// which the decoder reports.
var errMalformed = errors.New("malformed")

// checkDuplicateKeys rejects a record that gives one key twice in an object (at any
// depth: encoding/json would silently keep the last) and one without size,
// or with a null size (a transfer of unknown size cannot be checked at its
// destination). It returns nil for input that is not well-formed JSON,
// which the decoder reports.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	sized := false
	// walk reads one value, and returns its first token (nil for null)
	var walk func(top bool) (json.Token, error)
	walk = func(top bool) (json.Token, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, errMalformed
		}
		if tok != json.Delim('{') && tok != json.Delim('[') {
			return tok, nil
		}
		seen := map[string]bool{}
		for dec.More() {
			key := ""
			if tok == json.Delim('{') {
				k, err := dec.Token()
				if key, _ = k.(string); err != nil {
					return nil, errMalformed
				}
				if seen[key] {
					return nil, fmt.Errorf("key %q given twice in one object (which to keep is ambiguous)", key)
				}
				seen[key] = true
			}
			v, err := walk(false)
			if err != nil {
				return nil, err
			}
			sized = sized || top && key == "size" && v != nil
		}
		if _, err := dec.Token(); err != nil { // the closing } or ]
			return nil, errMalformed
		}
		return tok, nil
	}
	_, err := walk(true)
	switch {
	case errors.Is(err, errMalformed):
		return nil
	case err == nil && !sized:
		return fmt.Errorf("field size: missing (the file's size in bytes)")
	}
	return err
}
