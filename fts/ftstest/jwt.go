package ftstest

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// JWT returns an unsigned token (alg "none") carrying claims: what the
// simulator reads of a storage token (iss, sub, exp, scope) without
// verifying it.
func JWT(t testing.TB, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + ".c2ln"
}
