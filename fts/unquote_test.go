package fts

import (
	"encoding/json"
	"testing"
)

// unquote must give exactly what encoding/json gives, error or not.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"FINISHED"`, `"davs://h:2880/store/a b.root"`, `"a\"b"`, `"\u00e9"`, "\"caf\xc3\xa9\"", "\"bad\xff\"", `"tab	in"`, `"unterminated`, `"`, `x`, `"a\\nb"`, `"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // never handed to an UnmarshalJSON method
		}
		var want string
		werr := json.Unmarshal(b, &want)
		got, err := unquote(b)
		if (err == nil) != (werr == nil) || got != want {
			t.Fatalf("unquote(%q) = %q, %v; encoding/json: %q, %v", b, got, err, want, werr)
		}
	})
}
