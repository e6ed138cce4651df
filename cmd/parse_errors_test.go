package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestParseErrors_NameTheSettingAndTheForm: a value that does not parse,
// from the command line, the environment or the configuration file, is a
// usage error that names the setting, the value, where it came from and
// the form wanted; Go's own parse errors never reach a person.
func TestParseErrors_NameTheSettingAndTheForm(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "aso.yaml")
	if err := os.WriteFile(cfg, []byte("cool-off: 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"list", "--limit", "abc"}, `--limit "abc": want a whole number`},
		{nil, []string{"list", "--limit", "99999999999999999999"}, `--limit "99999999999999999999": want a whole number, and a smaller one`},
		{map[string]string{"ASO_LIMIT": "ten"}, []string{"list"}, `--limit "ten" (from ASO_LIMIT): want a whole number`},
		{nil, []string{"kill", "--json=maybe"}, `--json "maybe": want true or false`},
		{map[string]string{"ASO_DRY_RUN": "yes please"}, []string{"kill", "--all"}, `--dry-run "yes please" (from ASO_DRY_RUN): want true or false`},
		{nil, []string{"run", "--sim-failure-rate", "half"}, `--sim-failure-rate "half": want a number`},
		{nil, []string{"purge", "--older-than", "3 days"}, `--older-than "3 days": want a duration: a number and its unit`},
		{map[string]string{"ASO_CONFIG": cfg}, []string{"run"}, `--cool-off "30" (from config file ` + cfg + `): want a duration`},
		{map[string]string{"ASO_STALE_AFTER": "1d"}, []string{"status"}, `--stale-after "1d" (from ASO_STALE_AFTER): want a duration`},
	} {
		env := map[string]string{"ASO_CONFIG": "", "ASO_USER": "bob"}
		for k, v := range tc.env {
			env[k] = v
		}
		r := invocation{env: env}.run(t, tc.args...)
		if r.code != cmd.ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want exit 64 and %q", tc.env, tc.args, r.code, r.stderr, tc.want)
		}
		for _, raw := range []string{"strconv.", "time: ", "parsing "} {
			if strings.Contains(r.stderr, raw) {
				t.Errorf("%v %v: a Go parse error reaches the person: %q", tc.env, tc.args, r.stderr)
			}
		}
	}
}
