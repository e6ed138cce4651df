package ftssim_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// certClient is an HTTP client presenting the given proxy (cert, key and
// chain in one PEM) and trusting the PKI's CA.
func certClient(t testing.TB, p *ftstest.PKI, proxyPEM []byte) *http.Client {
	t.Helper()
	cert, err := tls.X509KeyPair(proxyPEM, proxyPEM)
	if err != nil {
		t.Fatalf("load proxy: %v", err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: p.CAPool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}
}

func tlsServer(t testing.TB, p *ftstest.PKI, opts ftssim.Options) *ftssim.Server {
	t.Helper()
	opts.TLS = &ftssim.TLSOptions{Cert: p.Server, ClientCAs: p.CAPool}
	return ftstest.NewServer(t, opts)
}

func TestAuth_Proxy(t *testing.T) {
	p := ftstest.NewPKI(t)
	srv := tlsServer(t, p, ftssim.Options{OAuth2: true})
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") {
		t.Fatalf("URL = %s", srv.URL)
	}
	wantEq(t, "user DN", p.UserDN, "/DC=org/DC=asyncstageout/OU=Users/CN=aso test user")

	r := call(t, certClient(t, p, p.ProxyPEM), http.MethodGet, srv.URL+"/whoami", "", nil)
	wantEq(t, "code", r.code, 200)
	w := r.obj(t)
	wantEq(t, "user_dn", w["user_dn"], p.UserDN)
	dns, _ := w["dn"].([]any)
	if len(dns) != 2 || dns[0] != p.UserDN || !strings.HasPrefix(fmt.Sprint(dns[1]), p.UserDN+"/CN=") {
		t.Errorf("dn = %v, want the user's DN then the proxy's", w["dn"])
	}
	wantEq(t, "method", w["method"], "certificate")
	// Python: hashlib.sha1(dn.encode()).hexdigest()[:16]
	wantEq(t, "delegation_id", w["delegation_id"], "d6b13ca02589043b")
	// A plain proxy's VO is its delegation id (a virtual VO); Python:
	// uuid.uuid5(uuid.UUID(BASE_ID), "d6b13ca02589043b").
	wantEq(t, "vos", w["vos"], []any{"d6b13ca02589043b"})
	wantEq(t, "vos_id", w["vos_id"], []any{"dc5726a4-0edf-5c50-a7d9-998dd48ec4ce"})
	wantEq(t, "voms_cred", w["voms_cred"], []any{})
	wantEq(t, "base_id", w["base_id"], "01874efb-4735-4595-bc9c-591aef8240c9")

	t.Run("user certificate without proxy", func(t *testing.T) {
		pem := append(append([]byte{}, p.UserCertPEM...), p.UserKeyPEM...)
		r := call(t, certClient(t, p, pem), http.MethodGet, srv.URL+"/whoami", "", nil)
		wantEq(t, "user_dn", r.obj(t)["user_dn"], p.UserDN)
	})
	t.Run("expired proxy is refused", func(t *testing.T) {
		c := certClient(t, p, ftstest.NewProxy(t, p, -time.Minute))
		if _, err := c.Get(srv.URL + "/whoami"); err == nil {
			t.Fatal("an expired proxy was accepted")
		}
	})
	t.Run("proxy of another CA is refused", func(t *testing.T) {
		other := ftstest.NewPKI(t)
		c := certClient(t, p, other.ProxyPEM)
		if _, err := c.Get(srv.URL + "/whoami"); err == nil {
			t.Fatal("a proxy from an unknown CA was accepted")
		}
	})
	t.Run("server client trusts the server", func(t *testing.T) {
		r := call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", testToken, nil)
		wantEq(t, "method", r.obj(t)["method"], "oauth2")
	})
}

func TestAuth_NoCredentials(t *testing.T) {
	srv := ftstest.NewServer(t, ftssim.Options{})
	r := call(t, srv.Client(), http.MethodGet, srv.URL+"/jobs/x", "", nil)
	wantEq(t, "code", r.code, 403)
	if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q, want text/html", ct)
	}
	if !strings.Contains(string(r.body), "<title>403 Forbidden</title>") {
		t.Errorf("body is not werkzeug's HTML: %s", r.body)
	}
}

func TestAuth_Tokens(t *testing.T) {
	srv := ftstest.NewServer(t, ftssim.Options{Tokens: []string{"good"}, UserDN: "/CN=robot"})
	wantEq(t, "bad token", call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", "bad", nil).code, 403)
	r := call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", "good", nil)
	wantEq(t, "good token", r.code, 200)
	wantEq(t, "user_dn", r.obj(t)["user_dn"], "/CN=robot")
	wantEq(t, "method", r.obj(t)["method"], "oauth2")
}

func TestPKI_CADir(t *testing.T) {
	p := ftstest.NewPKI(t)
	srv := tlsServer(t, p, ftssim.Options{OAuth2: true})
	// A client that trusts only what CADir holds reaches the server.
	pool := x509.NewCertPool()
	entries, err := os.ReadDir(p.CADir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(p.CADir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pool.AppendCertsFromPEM(raw)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	r := call(t, c, http.MethodGet, srv.URL+"/", testToken, nil)
	wantEq(t, "api", r.obj(t)["api"], map[string]any{"major": 3, "minor": 13, "patch": 4})
}
