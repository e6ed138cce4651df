package ftssim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/asyncstageout/aso/internal/jwtpayload"
)

// Storage tokens and scitags of a submission's files, as FTS 3.14's
// JobBuilder reads them:
//
//   - source_tokens / destination_tokens: one token per source and per
//     destination URL. If a file carries one list it must carry both, of the
//     lengths of its URL lists, with no empty token (400 otherwise). Each
//     token must be a JWT with iss, exp and scope claims (400 otherwise).
//     FTS checks them only for token-authenticated clients; the simulator
//     checks them whatever the authentication, so that a test proves what
//     a client sent.
//   - params.unmanaged_tokens: FTS neither exchanges nor refreshes the
//     tokens; refused (400 "Unmanaged tokens are not allowed!") when the
//     server does not allow it (Options.RefuseUnmanagedTokens).
//   - scitag: an integer 65..65535 (experiment << 6 | activity).

// TokenUse is what the simulator recorded of a token a file carried: its
// id and the claims that say who it was for, never the token itself.
type TokenUse struct {
	ID      string `json:"token_id"`
	Subject string `json:"sub,omitempty"`
	Scope   string `json:"scope"`
	Expires int64  `json:"exp"`
}

// fileTokens checks the token lists of one files[] entry and returns the
// token of each source and of each destination (nil without tokens).
func fileTokens(fd map[string]any, srcs, dsts []string) (src, dst []*TokenUse, serr *submitError) {
	st, sok := fd["source_tokens"]
	dt, dok := fd["destination_tokens"]
	if (st == nil || !sok) && (dt == nil || !dok) {
		return nil, nil, nil
	}
	sl, serr := tokenList("source_tokens", st)
	if serr != nil {
		return nil, nil, serr
	}
	dl, serr := tokenList("destination_tokens", dt)
	if serr != nil {
		return nil, nil, serr
	}
	if len(sl) == 0 && len(dl) == 0 {
		return nil, nil, nil
	}
	if len(sl) == 0 || len(dl) == 0 {
		return nil, nil, badRequest("Both source_tokens and destination_tokens are required if one of them is present.")
	}
	if len(sl) != len(srcs) {
		return nil, nil, badRequest("Length of source_tokens should be equal to the length of sources.")
	}
	for i, t := range sl {
		if t == "" {
			return nil, nil, badRequest("Token for source '%s' is missing.", srcs[i])
		}
	}
	if len(dl) != len(dsts) {
		return nil, nil, badRequest("Length of destination_tokens should be equal to the length of destinations.")
	}
	for i, t := range dl {
		if t == "" {
			return nil, nil, badRequest("Token for destination '%s' is missing.", dsts[i])
		}
	}
	for _, l := range []struct {
		in  []string
		out *[]*TokenUse
	}{{sl, &src}, {dl, &dst}} {
		for _, t := range l.in {
			u, serr := tokenUse(t)
			if serr != nil {
				return nil, nil, serr
			}
			*l.out = append(*l.out, u)
		}
	}
	return src, dst, nil
}

// tokenList reads a list of token strings; null is an empty list.
func tokenList(key string, v any) ([]string, *submitError) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, typeError("'%s' must be a list, not '%s'", key, pyType(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		switch t := e.(type) {
		case nil:
		case string:
			out[i] = t
		default:
			if key == "source_tokens" {
				return nil, badRequest("Source token is not a string: type(src_token)=<class '%s'>", pyType(e))
			}
			return nil, badRequest("Destination token is not a string: type(dst_token)=<class '%s'>", pyType(e))
		}
	}
	return out, nil
}

// tokenUse reads the claims FTS requires of a token, without verifying it.
func tokenUse(tok string) (*TokenUse, *submitError) {
	var claims struct {
		Iss   *string      `json:"iss"`
		Sub   string       `json:"sub"`
		Exp   *json.Number `json:"exp"`
		Scope *string      `json:"scope"`
	}
	_ = jwtpayload.Decode(tok, &claims) // unreadable: the claims missing are refused below
	switch {
	case claims.Iss == nil:
		return nil, badRequest("Token does not contain an iss claim")
	case claims.Exp == nil:
		return nil, badRequest("Token does not contain an exp claim")
	case claims.Scope == nil:
		return nil, badRequest("Token does not contain a scope claim")
	}
	exp, _ := claims.Exp.Float64()
	sum := sha256.Sum256([]byte(tok))
	return &TokenUse{ID: hex.EncodeToString(sum[:8]), Subject: claims.Sub, Scope: *claims.Scope, Expires: int64(exp)}, nil
}

// scitag validates a file's scitag: nil, or an integer 65..65535.
func scitag(v any) (any, *submitError) {
	if v == nil {
		return nil, nil
	}
	n, ok := v.(json.Number)
	i, err := n.Int64()
	if !ok || err != nil || i < 65 || i > 65535 {
		return nil, valueError("scitag %v is not an integer in the range [65, 65535]", v)
	}
	return n, nil
}

// tokenID is a file's src_token_id or dst_token_id: null without a token.
func tokenID(u *TokenUse) any {
	if u == nil {
		return nil
	}
	return u.ID
}

// scitagValue is a file's scitag for SimFile.
func scitagValue(v any) *int64 {
	n, ok := v.(json.Number)
	i, err := n.Int64()
	if !ok || err != nil {
		return nil
	}
	return &i
}
