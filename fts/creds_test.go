package fts_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
)

func TestNew_Proxy(t *testing.T) {
	for name, o := range map[string]proxyOpts{"pkcs1 key": {}, "pkcs8 key": {pkcs8: true}, "read-only file": {mode: 0o400}} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			f.reply("GET /whoami", 200, shared(t, "whoami.json"))
			proxy, _ := writeProxy(t, o)
			c, err := fts.New(fts.Config{Endpoint: f.srv.URL, ProxyPath: proxy, CertDir: f.caDir})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			w, err := c.WhoAmI(context.Background())
			if err != nil {
				t.Fatalf("WhoAmI: %v", err)
			}
			if got, want := w.DelegationID, "9e7a1c0d2b3f4a5e"; got != want {
				t.Errorf("delegation id = %q, want %q", got, want)
			}
			reqs := f.requests("GET /whoami")
			if len(reqs) != 1 {
				t.Fatalf("server saw %d whoami requests, want 1", len(reqs))
			}
			if got, want := reqs[0].ClientCerts, 2; got != want {
				t.Errorf("client presented %d certificates, want %d (proxy and user certificate)", got, want)
			}
			if got := reqs[0].Header.Get("Accept"); got != "application/json" {
				t.Errorf("Accept = %q", got)
			}
		})
	}
}

func TestNew_RefusesBadProxy(t *testing.T) {
	f := newFake(t)
	cases := map[string]struct {
		opts proxyOpts
		now  func() time.Time
		want []string
	}{
		"readable by others": {opts: proxyOpts{mode: 0o644}, want: []string{"accessible by group or others", "chmod 600"}},
		"readable by group":  {opts: proxyOpts{mode: 0o640}, want: []string{"chmod 600"}},
		"expired": {opts: proxyOpts{life: time.Hour}, now: func() time.Time { return time.Now().Add(2 * time.Hour) },
			want: []string{"expired at", "renew"}},
		"not yet valid": {opts: proxyOpts{before: time.Hour}, want: []string{"not valid before"}},
		"no key":        {opts: proxyOpts{noKey: true}, want: []string{"certificate and its private key"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			proxy, cert := writeProxy(t, tc.opts)
			_, err := fts.New(fts.Config{Endpoint: f.srv.URL, ProxyPath: proxy, CertDir: f.caDir, Now: tc.now})
			if err == nil {
				t.Fatal("New accepted the proxy")
			}
			for _, w := range append(tc.want, proxy) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if name == "expired" && !strings.Contains(err.Error(), cert.NotAfter.UTC().Format(time.RFC3339)) {
				t.Errorf("error %q does not give the expiry time %s", err, cert.NotAfter.UTC().Format(time.RFC3339))
			}
		})
	}
	if n := f.total(); n != 0 {
		t.Errorf("server saw %d requests, want none before the credentials are checked", n)
	}
}

func TestClient_ProxyExpiresWhileRunning(t *testing.T) {
	f := newFake(t)
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	now := time.Now()
	proxy, _ := writeProxy(t, proxyOpts{life: time.Hour})
	c, err := fts.New(fts.Config{Endpoint: f.srv.URL, ProxyPath: proxy, CertDir: f.caDir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	_, err = c.WhoAmI(context.Background())
	if err == nil || !strings.Contains(err.Error(), "expired") || fts.IsTransient(err) {
		t.Fatalf("WhoAmI with an expired proxy: err = %v, want a permanent expiry error", err)
	}
	if n := f.total(); n != 0 {
		t.Errorf("server saw %d requests made with an expired proxy", n)
	}
}

func TestClient_ProxyRenewedWhileRunning(t *testing.T) {
	f := newFake(t)
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	now := time.Now()
	path, _ := writeProxy(t, proxyOpts{life: time.Hour})
	c, err := fts.New(fts.Config{Endpoint: f.srv.URL, ProxyPath: path, CertDir: f.caDir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WhoAmI(context.Background()); err != nil {
		t.Fatal(err)
	}
	// voms-proxy-init rewrites the file: first a half-written, unusable
	// version, then the whole renewed proxy.
	renewedPath, renewed := writeProxy(t, proxyOpts{life: 12 * time.Hour})
	data, err := os.ReadFile(renewedPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WhoAmI(context.Background()); err != nil {
		t.Fatalf("WhoAmI while the proxy file is being rewritten: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour) // the first proxy has expired
	if _, err := c.WhoAmI(context.Background()); err != nil {
		t.Fatalf("WhoAmI after the proxy was renewed: %v", err)
	}
	reqs := f.requests("GET /whoami")
	if got := reqs[len(reqs)-1].ClientNotAfter; !got.Equal(renewed.NotAfter) {
		t.Errorf("last request presented a proxy expiring %v, want the renewed one (%v)", got, renewed.NotAfter)
	}
}

func TestNew_Token(t *testing.T) {
	const secret = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	f := newFake(t)
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	f.reply("GET /jobs/x1", 403, shared(t, "forbidden_403.html"))
	path := writeToken(t, secret, 0o600)
	c, err := fts.New(fts.Config{Endpoint: f.srv.URL, TokenFile: path, CertDir: f.caDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WhoAmI(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := f.requests("GET /whoami")[0]
	if got, want := req.Header.Get("Authorization"), "Bearer "+secret; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	if req.ClientCerts != 0 {
		t.Errorf("client presented %d certificates with a token", req.ClientCerts)
	}
	if err := c.EnsureDelegation(context.Background()); err != nil {
		t.Errorf("EnsureDelegation with a token: %v", err)
	}
	if n := len(f.requests("GET /delegation/9e7a1c0d2b3f4a5e")); n != 0 {
		t.Errorf("token client asked for its delegation %d times", n)
	}

	// A refreshed token is picked up without a new client.
	if err := os.WriteFile(path, []byte("second.token.value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	sts, err := c.Status(context.Background(), []string{"x1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.requests("GET /jobs/x1")[0].Header.Get("Authorization"); got != "Bearer second.token.value" {
		t.Errorf("after refresh Authorization = %q", got)
	}
	if sts[0].Err == nil || strings.Contains(sts[0].Err.Error(), "second.token") {
		t.Errorf("status error %v: want an error without the token", sts[0].Err)
	}

	// While the refresher rewrites the file, the last good token is used.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, future.Add(time.Minute), future.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(context.Background(), []string{"x1"}); err != nil {
		t.Fatal(err)
	}
	if got := f.requests("GET /jobs/x1")[1].Header.Get("Authorization"); got != "Bearer second.token.value" {
		t.Errorf("during a rewrite Authorization = %q, want the last good token", got)
	}
}

func TestNew_RefusesBadToken(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"readable by others": {"abc.def.ghi", 0o644, "chmod 600"},
		"empty":              {"  ", 0o600, "is empty"},
		"two tokens":         {"abc.def.ghi\nxyz.uvw.rst", 0o600, "one token on one line"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeToken(t, tc.body, tc.mode)
			_, err := fts.New(fts.Config{Endpoint: "https://fts.example.org:8446", TokenFile: path})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("New: err = %v, want one naming %s and saying %q", err, path, tc.want)
			}
			if strings.Contains(err.Error(), "abc.def") {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	proxy, _ := writeProxy(t, proxyOpts{})
	for name, tc := range map[string]struct {
		cfg  fts.Config
		want string
	}{
		"no endpoint":    {fts.Config{ProxyPath: proxy}, "no endpoint"},
		"no scheme":      {fts.Config{Endpoint: "fts.example.org:8446", ProxyPath: proxy}, "want https://host:port"},
		"no credentials": {fts.Config{Endpoint: "https://fts.example.org:8446"}, "no credentials"},
		"missing proxy":  {fts.Config{Endpoint: "https://fts.example.org:8446", ProxyPath: "/nonexistent/x509up_u1"}, "/nonexistent/x509up_u1"},
		"empty CA dir":   {fts.Config{Endpoint: "https://fts.example.org:8446", ProxyPath: proxy, CertDir: t.TempDir()}, "holds no certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := fts.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestClient_UnknownServerCA(t *testing.T) {
	f := newFake(t)
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	otherCA := writeCADir(t, user().caCert) // a CA that did not sign the server's certificate
	c := f.proxyClient(t, func(cfg *fts.Config) { cfg.CertDir = otherCA })
	_, err := c.WhoAmI(context.Background())
	if err == nil || fts.IsTransient(err) || !strings.Contains(err.Error(), "cannot verify the server's certificate") {
		t.Fatalf("WhoAmI against an untrusted server: err = %v, want a permanent certificate error", err)
	}
	insecure := f.proxyClient(t, func(cfg *fts.Config) { cfg.CertDir = otherCA; cfg.Insecure = true })
	if _, err := insecure.WhoAmI(context.Background()); err != nil {
		t.Fatalf("WhoAmI with Insecure: %v", err)
	}
}

func TestDefaultProxyPath(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got, want := fts.DefaultProxyPath(getenv, 1234), "/tmp/x509up_u1234"; got != want {
		t.Errorf("without X509_USER_PROXY: %q, want %q", got, want)
	}
	env["X509_USER_PROXY"] = "/home/alice/.proxy"
	if got, want := fts.DefaultProxyPath(getenv, 1234), "/home/alice/.proxy"; got != want {
		t.Errorf("with X509_USER_PROXY: %q, want %q", got, want)
	}
}
