package jwtpayload_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/internal/jwtpayload"
)

type claims struct {
	Iss   string       `json:"iss"`
	Sub   string       `json:"sub"`
	Exp   *json.Number `json:"exp"`
	Scope string       `json:"scope"`
}

// jws joins a header, the payload encoded with enc, and a signature.
func jws(enc *base64.Encoding, payload string) string {
	return "eyJhbGciOiJSUzI1NiJ9." + enc.EncodeToString([]byte(payload)) + ".c2lnbmF0dXJl"
}

func TestDecode(t *testing.T) {
	// "??>" encodes to characters that differ between base64 and base64url
	payload := `{"iss":"https://iam.example/","sub":"u-1","exp":1893456000,"scope":"storage.read:/ ??>"}`
	for name, tok := range map[string]string{
		"unpadded": jws(base64.RawURLEncoding, payload),
		"padded":   jws(base64.URLEncoding, payload),
	} {
		t.Run(name, func(t *testing.T) {
			var c claims
			if err := jwtpayload.Decode(tok, &c); err != nil {
				t.Fatalf("Decode(%q): %v", tok, err)
			}
			if c.Iss != "https://iam.example/" || c.Sub != "u-1" || c.Exp == nil || c.Exp.String() != "1893456000" || c.Scope != "storage.read:/ ??>" {
				t.Errorf("claims %+v", c)
			}
		})
	}
}

func TestDecode_Malformed(t *testing.T) {
	const secret = "c2VjcmV0LXNpZ25hdHVyZQ"
	for _, tc := range []struct {
		name, tok, want string
	}{
		{"opaque", "opaque-" + secret, "not a JWT (1 dot-separated parts, want 3)"},
		{"two parts", "eyJhbGciOiJub25lIn0." + secret, "not a JWT (2 dot-separated parts, want 3)"},
		{"five parts (JWE)", "a.b.c.d." + secret, "not a JWT (5 dot-separated parts, want 3)"},
		{"standard base64", jws(base64.StdEncoding, `{"scope":"??>"}`) + secret, "JWT payload is not base64url"},
		{"not base64", "h.%%%." + secret, "JWT payload is not base64url"},
		{"not JSON", jws(base64.RawURLEncoding, "sub=u-1") + secret, "JWT payload is not a JSON object"},
		{"a JSON array", jws(base64.RawURLEncoding, `["u-1"]`) + secret, "JWT payload is not a JSON object"},
		{"truncated JSON", jws(base64.RawURLEncoding, `{"sub":"u-1"`) + secret, "JWT payload is not a JSON object"},
		{"a claim of another type", jws(base64.RawURLEncoding, `{"sub":7,"iss":"i"}`) + secret, "JWT claim sub is a JSON number, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c claims
			err := jwtpayload.Decode(tc.tok, &c)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Decode = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q quotes the token", err)
			}
		})
	}
}

// A payload of the wrong type for one claim still yields the others, as
// encoding/json does: a caller may use what it got and refuse what it
// lacks.
func TestDecode_KeepsTheClaimsThatFit(t *testing.T) {
	var c claims
	err := jwtpayload.Decode(jws(base64.RawURLEncoding, `{"iss":"i","sub":["x"],"scope":"s"}`), &c)
	if err == nil {
		t.Fatal("Decode of a list for sub: no error")
	}
	if c.Iss != "i" || c.Scope != "s" || c.Sub != "" {
		t.Errorf("claims %+v, want iss and scope set", c)
	}
}
