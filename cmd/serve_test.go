package cmd_test

import (
	"strings"
	"testing"
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
		r := aso(t, append([]string{st, "serve"}, c.args...)...).wantCode(t, 2)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %v: stderr %q, want it to say %q", c.args, r.stderr, c.want)
		}
	}
	r := invocation{env: map[string]string{"ASO_LISTEN": "0.0.0.0:0"}}.run(t, st, "serve").wantCode(t, 2)
	if !strings.Contains(r.stderr, "is not loopback") {
		t.Errorf("ASO_LISTEN is not read: %q", r.stderr)
	}
	r = invocation{env: map[string]string{"ASO_CACHE_TTL": "3s"}}.run(t, "config").wantCode(t, 0)
	if !strings.Contains(r.stdout, "serve") || !strings.Contains(r.stdout, "cache-ttl") || !strings.Contains(r.stdout, "ASO_CACHE_TTL") {
		t.Errorf("aso config does not show serve's --cache-ttl from ASO_CACHE_TTL:\n%s", r.stdout)
	}
}
