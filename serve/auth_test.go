package serve_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/serve"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func htpasswd(t *testing.T, users ...string) string {
	t.Helper()
	var b strings.Builder
	for _, u := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(u+"-pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	return writeFile(t, "htpasswd", b.String())
}

// TestAuth_BasicScopes: alice sees her own transfers only: her overview,
// lists and transfers; another user's page or list is refused (403), his
// transfer is not found (404), and the metrics are for operators; carol,
// an operator, sees everything; a wrong password is 401.
func TestAuth_BasicScopes(t *testing.T) {
	b := memfileBackend(t, 40)
	auth, err := serve.NewAuth(serve.AuthOptions{Htpasswd: htpasswd(t, "alice", "carol"), Operators: []string{"carol"}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := start(t, b, serve.Options{Auth: auth})
	as := func(user string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, user+"-pw") }
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		who, path string
		code      int
	}{
		{"alice", "/", http.StatusSeeOther},
		{"alice", "/users/alice", 200},
		{"alice", "/users/bob", 403},
		{"alice", "/transfers?user=bob", 403},
		{"alice", "/api/status?user=bob", 403},
		{"alice", "/metrics", 403},
		{"carol", "/", 200},
		{"carol", "/users/bob", 200},
		{"carol", "/metrics", 200},
		{"carol", "/api/transfers?user=bob&limit=5", 200},
	} {
		if code, body := get(t, noRedirect, u+c.path, as(c.who)); code != c.code {
			t.Errorf("%s GET %s: %d, want %d: %.200s", c.who, c.path, code, c.code, body)
		}
	}
	// alice's list holds only her transfers; bob's transfer is not found
	_, lines := get(t, nil, u+"/api/transfers?limit=1000", as("alice"))
	var bobs string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var d struct{ ID, User string }
		if err := json.Unmarshal([]byte(line), &d); err != nil || d.User != "alice" {
			t.Fatalf("alice's list holds %q (%v)", line, err)
		}
	}
	_, bl := get(t, nil, u+"/api/transfers?user=bob&limit=1", as("carol"))
	var bob struct {
		ID string `json:"_id"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(bl)), &bob); err != nil || bob.ID == "" {
		t.Fatalf("carol's list of bob: %q %v", bl, err)
	}
	bobs = bob.ID
	if code, _ := get(t, nil, u+"/transfers/"+bobs, as("alice")); code != 404 {
		t.Errorf("alice GET bob's transfer: %d, want 404", code)
	}
	code, _ := get(t, nil, u+"/", func(r *http.Request) { r.SetBasicAuth("alice", "wrong") })
	if code != 401 {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	req, _ := http.NewRequest(http.MethodGet, u+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("no credentials: %d %q, want 401 asking for basic auth", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestAuth_GridProxy: over TLS, a grid proxy (RFC 3820) of a user whose DN
// the grid-mapfile maps to alice is alice; her user certificate too; a
// certificate whose DN is not mapped is refused, and so is one of another
// CA at the handshake.
func TestAuth_GridProxy(t *testing.T) {
	b := memfileBackend(t, 20)
	p, err := ftstest.MakePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ftstest.MakePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gridmap := writeFile(t, "grid-mapfile", fmt.Sprintf("# DN user\n%q alice\n", p.UserDN))
	auth, err := serve.NewAuth(serve.AuthOptions{ClientCAs: p.CAPool, GridMapfile: gridmap})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	s, err := serve.New(serve.Options{Store: b.st, Auth: auth, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.TLS = auth.TLSConfig(p.Server)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	client := func(certPEM, keyPEM []byte) *http.Client {
		cfg := &tls.Config{RootCAs: p.CAPool, MinVersion: tls.VersionTLS12}
		if certPEM != nil {
			c, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: time.Minute}
	}
	proxy := client(p.ProxyPEM, p.ProxyPEM)
	if code, body := get(t, proxy, hs.URL+"/users/alice"); code != 200 || !strings.Contains(body, "Transfers of") {
		t.Fatalf("alice's proxy on her page: %d %.300s", code, body)
	}
	if code, _ := get(t, proxy, hs.URL+"/users/bob"); code != 403 {
		t.Fatalf("alice's proxy on bob's page: %d, want 403", code)
	}
	if code, _ := get(t, client(p.UserCertPEM, p.UserKeyPEM), hs.URL+"/users/alice"); code != 200 {
		t.Fatalf("alice's certificate: %d", code)
	}
	if code, body := get(t, client(nil, nil), hs.URL+"/users/alice"); code != 401 {
		t.Fatalf("no certificate: %d %.200s", code, body)
	}
	unmapped := writeFile(t, "empty-mapfile", "\"/DC=org/CN=someone else\" bob\n")
	auth2, err := serve.NewAuth(serve.AuthOptions{ClientCAs: p.CAPool, GridMapfile: unmapped})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := serve.New(serve.Options{Store: b.st, Auth: auth2})
	hs2 := httptest.NewUnstartedServer(s2.Handler())
	hs2.TLS = auth2.TLSConfig(p.Server)
	hs2.StartTLS()
	t.Cleanup(hs2.Close)
	if code, body := get(t, proxy, hs2.URL+"/"); code != 403 || !strings.Contains(body, "not in the grid-mapfile") {
		t.Fatalf("an unmapped DN: %d %.300s", code, body)
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/", nil)
	if resp, err := client(other.ProxyPEM, other.ProxyPEM).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a proxy of another CA was let in: %d", resp.StatusCode)
	}
}
