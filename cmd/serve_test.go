package cmd_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestServe_FlagsChecked: aso serve refuses, as usage errors naming the
// flag, the settings that would expose transfers or passwords, and takes
// every flag from its ASO_ variable too (as aso config shows).
func TestServe_FlagsChecked(t *testing.T) {
	st := newState(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "is not loopback"},
		{[]string{"--listen", "0.0.0.0:0", "--htpasswd", "/etc/aso/htpasswd"}, "in the clear"},
		{[]string{"--client-ca", "/etc/grid-security/certificates"}, "--client-ca"},
		{[]string{"--tls-cert", "c.pem"}, "together"},
		{[]string{"--operators", "ops"}, "nobody is authenticated"},
		{[]string{"--cache-ttl", "0s"}, "--cache-ttl"},
		{[]string{"--page-size", "5000"}, "--page-size"},
		{[]string{"--listen", "8080"}, "HOST:PORT"},
	} {
		r := aso(t, append([]string{st, "serve"}, c.args...)...).wantCode(t, cmd.ExitUsage)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %v: stderr %q, want it to say %q", c.args, r.stderr, c.want)
		}
	}
	r := invocation{env: map[string]string{"ASO_LISTEN": "0.0.0.0:0"}}.run(t, st, "serve").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "is not loopback") {
		t.Errorf("ASO_LISTEN is not read: %q", r.stderr)
	}
	r = invocation{env: map[string]string{"ASO_CACHE_TTL": "3s"}}.run(t, "config").wantCode(t, 0)
	if !strings.Contains(r.stdout, "serve") || !strings.Contains(r.stdout, "cache-ttl") || !strings.Contains(r.stdout, "ASO_CACHE_TTL") {
		t.Errorf("aso config does not show serve's --cache-ttl from ASO_CACHE_TTL:\n%s", r.stdout)
	}
}

// TestServe_ReadOnlyFile: aso serve reads a file store it may not write
// (chmod 0444), and leaves it as it was.
func TestServe_ReadOnlyFile(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := startServe(t, flag)
	for _, p := range []string{"/api/overview", "/api/status", "/api/transfers", "/metrics"} {
		resp, err := http.Get(u + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "alice") {
			t.Fatalf("GET %s: %d %.300s", p, resp.StatusCode, body)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the state file changed (%v)", err)
	}
}
