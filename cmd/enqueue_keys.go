package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkDuplicateKeys rejects a record that gives one key twice in an object (at any
// depth: encoding/json would silently keep the last) and one without size,
// or with a null size (a transfer of unknown size cannot be checked at its
// destination). It
// returns nil for input that is not well-formed JSON, which the decoder
// reports.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type object struct {
		keys    map[string]bool
		wantKey bool // the next string token is a key
	}
	var stack []*object
	var top map[string]bool
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		var o *object
		if n := len(stack); n > 0 {
			o = stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &object{keys: map[string]bool{}, wantKey: true})
				if top == nil {
					top = stack[0].keys
				}
				continue
			case '}', ']':
				if t == '}' {
					stack = stack[:len(stack)-1]
				} else if len(stack) > 0 && stack[len(stack)-1] == nil {
					stack = stack[:len(stack)-1]
				}
			case '[':
				stack = append(stack, nil) // an array: its strings are values
				continue
			}
		case string:
			if o != nil && o.wantKey {
				if o.keys[t] {
					return fmt.Errorf("key %q given twice in one object (which to keep is ambiguous)", t)
				}
				o.keys[t] = true
				o.wantKey = false
				if len(stack) == 1 && t == "size" {
					if v, err := dec.Token(); err == nil && v == nil {
						delete(o.keys, t) // null: no size
					}
					o.wantKey = true
				}
				continue
			}
		}
		// a value ended: the next token of an object is a key
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantKey = true
		}
	}
	if top != nil && !top["size"] {
		return fmt.Errorf("field size: missing (the file's size in bytes)")
	}
	return nil
}
