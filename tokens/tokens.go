// Package tokens obtains the WLCG storage tokens of one user, from a token
// file or a configured command (an oidc-agent client, say), caches them by
// scope and gets fresh ones before they expire.
//
// Tokens are secrets: no error of this package contains one, a command is
// run without a shell and receives only the scope (as an argument or on
// stdin), and its output is never quoted in an error except with every
// token-like word redacted. It does not verify tokens: it reads their exp
// claim to know when to refresh them; the storage verifies them.
package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/asyncstageout/aso/internal/jwtpayload"
)

// Defaults of Source.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMinLifetime = time.Hour
)

// ScopePlaceholder, in an argument of Source.Command, is replaced by the
// requested scope; without it the scope is written on the command's stdin.
const ScopePlaceholder = "{scope}"

// ErrToken wraps every failure to obtain a token.
var ErrToken = errors.New("storage token")

// Source gives tokens for scopes. Exactly one of File and Command is set.
// It is safe for concurrent use.
type Source struct {
	// File holds one token (a JWT, surrounding white space ignored), kept
	// fresh by another program; it is read again when the cached token
	// nears expiry. Its scope must cover every scope asked for.
	File string
	// Command is the argv of a program printing a token for a scope on
	// its stdout (first line). It runs without a shell.
	Command []string
	// Timeout bounds one run of Command; default DefaultTimeout.
	Timeout time.Duration
	// MinLifetime is how long a token must still be valid when handed
	// out (the time FTS may keep the job queued and transferring); a
	// cached token with less is refreshed. Default DefaultMinLifetime.
	MinLifetime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cached
	// Fetches counts the tokens obtained (file reads and command runs).
	Fetches int
}

type cached struct {
	token string
	exp   time.Time
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Token returns a token for scope valid for at least MinLifetime.
func (s *Source) Token(ctx context.Context, scope string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	minLife := s.MinLifetime
	if minLife <= 0 {
		minLife = DefaultMinLifetime
	}
	key := scope
	if s.File != "" {
		key = "" // one token for every scope
	}
	if c, ok := s.cache[key]; ok && c.exp.Sub(s.now()) >= minLife {
		if err := covers(c.token, scope); err != nil {
			return "", err
		}
		return c.token, nil
	}
	tok, err := s.fetch(ctx, scope)
	if err != nil {
		return "", err
	}
	s.Fetches++
	claims, err := Claims(tok)
	if err != nil {
		return "", fmt.Errorf("%w for %s: %v", ErrToken, scope, err)
	}
	exp := time.Unix(claims.Exp, 0)
	if left := exp.Sub(s.now()); left < minLife {
		return "", fmt.Errorf("%w for %s: the new token expires in %v, less than the minimum lifetime %v (renew it, or lower --storage-token-min-lifetime)",
			ErrToken, scope, left.Round(time.Second), minLife)
	}
	if err := covers(tok, scope); err != nil {
		return "", err
	}
	if s.cache == nil {
		s.cache = map[string]cached{}
	}
	s.cache[key] = cached{tok, exp}
	return tok, nil
}

func (s *Source) fetch(ctx context.Context, scope string) (string, error) {
	switch {
	case s.File != "" && len(s.Command) > 0:
		return "", fmt.Errorf("%w: give a token file or a token command, not both", ErrToken)
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("%w file: %v", ErrToken, err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("%w file %s is empty", ErrToken, s.File)
		}
		return tok, nil
	case len(s.Command) > 0:
		return s.run(ctx, scope)
	}
	return "", fmt.Errorf("%w: no token file or command is configured", ErrToken)
}

// run runs Command for scope.
func (s *Source) run(ctx context.Context, scope string) (string, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := make([]string, len(s.Command)-1)
	placed := false
	for i, a := range s.Command[1:] {
		if strings.Contains(a, ScopePlaceholder) {
			a, placed = strings.ReplaceAll(a, ScopePlaceholder, scope), true
		}
		args[i] = a
	}
	cmd := exec.CommandContext(ctx, s.Command[0], args...)
	if !placed {
		cmd.Stdin = strings.NewReader(scope + "\n")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	name := s.Command[0]
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("%w command %s for %s: no answer within %v", ErrToken, name, scope, timeout)
	case err != nil:
		return "", fmt.Errorf("%w command %s for %s: %v: %s", ErrToken, name, scope, err, Redact(clip(errb.String())))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("%w command %s for %s printed no token", ErrToken, name, scope)
	}
	return line, nil
}

// covers checks that tok's scope claim grants scope: the same operation
// (storage.modify also grants storage.create) on the same path or a parent.
func covers(tok, scope string) error {
	c, err := Claims(tok)
	if err != nil {
		return fmt.Errorf("%w for %s: %v", ErrToken, scope, err)
	}
	op, p, _ := strings.Cut(scope, ":")
	for _, have := range strings.Fields(c.Scope) {
		hop, hp, ok := strings.Cut(have, ":")
		if !ok || !(hop == op || op == "storage.create" && hop == "storage.modify") {
			continue
		}
		if hp == "/" || hp == p || strings.HasPrefix(p, strings.TrimSuffix(hp, "/")+"/") {
			return nil
		}
	}
	return fmt.Errorf("%w: the token's scopes %q do not grant %s", ErrToken, c.Scope, scope)
}

// TokenClaims are the claims of a token aso reads.
type TokenClaims struct {
	Sub   string `json:"sub"`
	Exp   int64  `json:"exp"`
	Scope string `json:"scope"`
}

// Claims decodes the payload of a JWT without verifying it. The error
// never contains the token.
func Claims(tok string) (TokenClaims, error) {
	var c TokenClaims
	var m struct {
		Sub   string       `json:"sub"`
		Exp   *json.Number `json:"exp"`
		Scope string       `json:"scope"`
	}
	if err := jwtpayload.Decode(tok, &m); err != nil {
		return c, err
	}
	if m.Exp == nil {
		return c, errors.New("JWT without an exp claim")
	}
	f, err := m.Exp.Float64()
	if err != nil {
		return c, errors.New("JWT exp claim is not a number")
	}
	return TokenClaims{Sub: m.Sub, Exp: int64(f), Scope: m.Scope}, nil
}

// jwtLike matches anything shaped like a JWT or a long opaque secret.
var jwtLike = regexp.MustCompile(`[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*|[A-Za-z0-9_\-+/=]{40,}`)

// Redact replaces every token-like word of s.
func Redact(s string) string { return jwtLike.ReplaceAllString(s, "<redacted>") }

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
