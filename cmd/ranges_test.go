package cmd_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestRanges_OutOfRangeIsUsageError: a count or duration outside its
// range, from a flag, the environment or the file, exits 64 naming the
// setting, the value as given and the range; a duration without a unit is
// refused and shown as given, not as 0s; a malformed --fts URL is said
// before the proxy it would need.
func TestRanges_OutOfRangeIsUsageError(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	st := newState(t)
	run := []string{st, "--user", "alice", "run", "--sites", sites, "--progress", "never", "--once"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"lock-ttl 1ms", nil, []string{"--lock-ttl", "1ms"}, `--lock-ttl "1ms": out of range: want 1s to 24h`},
		{"fts-retry -2", nil, []string{"--fts-retry", "-2"}, `--fts-retry "-2": out of range: want 1 to 10; 0: the server's default; -1: none`},
		{"interval above", map[string]string{"ASO_INTERVAL": "2h"}, nil, `--interval "2h" (from ASO_INTERVAL): out of range: want 10ms to 1h`},
		{"max-runtime below", nil, []string{"--max-runtime", "10ms"}, `--max-runtime "10ms": out of range: want at least 1s; 0: no limit`},
		{"unit-less from the file", map[string]string{"ASO_CONFIG": writeConfig(t, "lock-ttl: 30\n")}, nil, `--lock-ttl "30" (from config file`},
		{"fts not a URL", nil, []string{"--fts", "https//fts3.example.org:8446"}, `--fts "https//fts3.example.org:8446": want https://host:port`},
		{"fts bad port", nil, []string{"--fts", "https://fts3.example.org:84x6"}, `--fts "https://fts3.example.org:84x6": not a URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invocation{env: tc.env}.run(t, append(run, tc.args...)...).wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "proxy") {
				t.Errorf("stderr %q, want %q (and no word of a proxy)", r.stderr, tc.want)
			}
		})
	}
	cfg := writeConfig(t, "lock-ttl: 30\n")
	r := invocation{env: map[string]string{"ASO_CONFIG": cfg, "ASO_COUCHDB_TIMEOUT": "30"}}.run(t, "config").wantCode(t, cmd.ExitUsage)
	wantMatch(t, r.stdout, `(?m)^run\s+lock-ttl\s+30\s+file `)
	for _, want := range []string{`run: --lock-ttl "30" (from config file`, `couchdb-timeout "30"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("aso config: stderr %q lacks %q", r.stderr, want)
		}
	}
}
