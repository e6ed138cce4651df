package tokens_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/tokens"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "get-token")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSource_CommandRefresh: the command gets the scope (as an argument),
// its token is cached while it has more than MinLifetime left, and a new one
// is fetched once it has less.
func TestSource_CommandRefresh(t *testing.T) {
	clk := &clock{t0}
	dir := t.TempDir()
	// the script prints the token the test left for the scope it is given, and logs its arguments
	cmd := script(t, `echo "$@" >> `+dir+`/calls; cat `+dir+`/next`)
	put := func(exp time.Time, scope string) string {
		tok := ftstest.JWT(t, map[string]any{"iss": "i", "sub": "alice", "exp": exp.Unix(), "scope": scope})
		if err := os.WriteFile(filepath.Join(dir, "next"), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s := &tokens.Source{Command: []string{cmd, "--scope", "{scope}", "cms"}, MinLifetime: time.Hour, Now: clk.Now}
	first := put(t0.Add(3*time.Hour), "storage.read:/store/user")
	got, err := s.Token(context.Background(), "storage.read:/store/user/a")
	if err != nil || got != first {
		t.Fatalf("first token: %v (same: %v)", err, got == first)
	}
	put(t0.Add(10*time.Hour), "storage.read:/store/user")
	clk.t = t0.Add(90 * time.Minute) // 90 min left: still cached
	if got, _ := s.Token(context.Background(), "storage.read:/store/user/a"); got != first || s.Fetches != 1 {
		t.Fatalf("a token with 90 min left was not reused (fetches %d)", s.Fetches)
	}
	clk.t = t0.Add(2*time.Hour + time.Minute) // 59 min left: refreshed
	second, err := s.Token(context.Background(), "storage.read:/store/user/a")
	if err != nil || second == first || s.Fetches != 2 {
		t.Fatalf("a token with 59 min left was not refreshed: err %v, fetches %d", err, s.Fetches)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if want := "--scope storage.read:/store/user/a cms\n"; !strings.HasPrefix(string(calls), want) {
		t.Fatalf("the command was called with %q, want %q", calls, want)
	}
}

func TestSource_ScopeOnStdin(t *testing.T) {
	tok := ftstest.JWT(t, map[string]any{"iss": "i", "exp": t0.Add(5 * time.Hour).Unix(), "scope": "storage.modify:/store"})
	dir := t.TempDir()
	cmd := script(t, `cat > `+dir+`/stdin; echo '`+tok+`'`)
	s := &tokens.Source{Command: []string{cmd}, Now: (&clock{t0}).Now}
	if _, err := s.Token(context.Background(), "storage.modify:/store/user/b"); err != nil {
		t.Fatal(err)
	}
	in, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if string(in) != "storage.modify:/store/user/b\n" {
		t.Fatalf("stdin %q", in)
	}
}

// TestSource_Errors: every failure is ErrToken, says what to do, and never
// contains the token, even when the command prints it on stderr.
func TestSource_Errors(t *testing.T) {
	secret := ftstest.JWT(t, map[string]any{"iss": "i", "exp": t0.Add(30 * time.Minute).Unix(), "scope": "storage.read:/"})
	wide := ftstest.JWT(t, map[string]any{"iss": "i", "exp": t0.Add(5 * time.Hour).Unix(), "scope": "storage.read:/store/other"})
	tokFile := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tokFile, []byte(wide), 0o600)
	for _, c := range []struct {
		name string
		src  *tokens.Source
		want string
	}{
		{"short lifetime", &tokens.Source{Command: []string{script(t, "echo '"+secret+"'")}}, "less than the minimum lifetime"},
		{"failing command", &tokens.Source{Command: []string{script(t, "echo 'bad: "+secret+"' >&2; exit 3")}}, "exit status 3"},
		{"timeout", &tokens.Source{Command: []string{script(t, "sleep 5")}, Timeout: 200 * time.Millisecond}, "no answer within 200ms"},
		{"not a JWT", &tokens.Source{Command: []string{script(t, "echo opaque-secret-value")}}, "not a JWT"},
		{"scope not granted", &tokens.Source{File: tokFile}, `do not grant storage.read:/store/user`},
		{"missing file", &tokens.Source{File: "/nonexistent/tok"}, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.src.Now = (&clock{t0}).Now
			_, err := c.src.Token(context.Background(), "storage.read:/store/user")
			if err == nil || !errors.Is(err, tokens.ErrToken) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrToken saying %q", err, c.want)
			}
			for _, s := range []string{secret, wide, "opaque-secret-value"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error shows a token: %v", err)
				}
			}
		})
	}
}
