// Package jwtpayload reads the claims of a JSON Web Token without verifying
// it, for what a client or a simulator needs to know of a token before its
// issuer's verifier sees it: its subject, expiry, scopes, issuer.
package jwtpayload

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode decodes the payload of tok, a JWS in compact form (header,
// payload and signature, base64url-encoded and separated by dots), into v,
// without checking the signature. The payload may keep its base64 padding.
// When the payload is JSON that does not fit v, the fields that fit are
// set and the error says so. No error contains the token.
func Decode(tok string, v any) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT (%d dot-separated parts, want 3)", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return errors.New("JWT payload is not base64url")
	}
	err = json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("JWT claim %s is a JSON %s, not a %s", te.Field, te.Value, te.Type)
	default:
		return errors.New("JWT payload is not a JSON object")
	}
}
