package ftssim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

func storageToken(t testing.TB, sub, scope string) string {
	return ftstest.JWT(t, map[string]any{"iss": "https://cms-auth.example.org/", "sub": sub, "exp": 1900000000, "scope": scope})
}

// TestTokens_PerFile: the simulator records which token each file used,
// shows its scitag, and refuses what FTS refuses.
func TestTokens_PerFile(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	tr := transfer("davs://a.example.org/store/f", "davs://b.example.org/store/f")
	tr["source_tokens"] = []string{storageToken(t, "alice", "storage.read:/store")}
	tr["destination_tokens"] = []string{storageToken(t, "alice", "storage.modify:/store")}
	tr["scitag"] = 3<<6 | 2
	f.submit(jobBody(map[string]any{"unmanaged_tokens": true}, tr, transfer("davs://a.example.org/g", "davs://b.example.org/g")))
	got := f.srv.Files()
	wantEq(t, "files", len(got), 2)
	if g := got[0]; g.SourceToken == nil || g.DestinationToken == nil {
		t.Fatalf("file 0 tokens not recorded: %+v", g)
	}
	wantEq(t, "source scope", got[0].SourceToken.Scope, "storage.read:/store")
	wantEq(t, "destination scope", got[0].DestinationToken.Scope, "storage.modify:/store")
	wantEq(t, "subject", got[0].SourceToken.Subject, "alice")
	wantEq(t, "scitag", *got[0].Scitag, int64(194))
	wantEq(t, "unmanaged", got[0].UnmanagedTokens, true)
	if got[1].SourceToken != nil || got[1].Scitag != nil {
		t.Fatalf("file 1 carried no token and no scitag, recorded %+v", got[1])
	}
	raw := f.do(http.MethodGet, "/sim/files", nil)
	if strings.Contains(string(raw.body), tr["source_tokens"].([]string)[0]) {
		t.Fatal("/sim/files shows a token itself; it must show only its id and claims")
	}
}

func TestTokens_Refused(t *testing.T) {
	good := storageToken(t, "alice", "storage.read:/")
	noScope := ftstest.JWT(t, map[string]any{"iss": "i", "exp": 1})
	for _, c := range []struct {
		name     string
		src, dst any
		scitag   any
		want     string
	}{
		{"only source", []string{good}, nil, nil, "Both source_tokens and destination_tokens are required"},
		{"count", []string{good, good}, []string{good}, nil, "Length of source_tokens should be equal"},
		{"empty", []string{good}, []string{""}, nil, "Token for destination 'davs://b.example.org/f' is missing."},
		{"no scope", []string{good}, []string{noScope}, nil, "Token does not contain a scope claim"},
		{"not a JWT", []string{"opaque"}, []string{good}, nil, "Token does not contain an iss claim"},
		{"scitag low", nil, nil, 64, "scitag 64"},
		{"scitag high", nil, nil, 65536, "scitag 65536"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, ftssim.Options{})
			tr := transfer("davs://a.example.org/f", "davs://b.example.org/f")
			if c.src != nil {
				tr["source_tokens"] = c.src
			}
			if c.dst != nil {
				tr["destination_tokens"] = c.dst
			}
			if c.scitag != nil {
				tr["scitag"] = c.scitag
			}
			r := f.do(http.MethodPost, "/jobs", jobBody(nil, tr))
			wantEq(t, "code", r.code, 400)
			if !strings.Contains(string(r.body), c.want) {
				t.Fatalf("reply %s, want it to say %q", r.body, c.want)
			}
			wantEq(t, "nothing received", len(f.srv.Files()), 0)
		})
	}
	t.Run("unmanaged refused", func(t *testing.T) {
		f := newFixture(t, ftssim.Options{RefuseUnmanagedTokens: true})
		r := f.do(http.MethodPost, "/jobs", jobBody(map[string]any{"unmanaged_tokens": true}, transfer("davs://a.example.org/f", "davs://b.example.org/f")))
		wantEq(t, "code", r.code, 400)
		if !strings.Contains(string(r.body), "Unmanaged tokens are not allowed!") {
			t.Fatalf("reply %s", r.body)
		}
	})
}
