package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// TestRun_BadSitesFileRefusedBeforeAnyClaim: a sites file whose rule
// cannot be compiled (a counted repetition beyond the engine's limit, an
// unclosed group) stops `aso run` before it claims anything, with an error
// naming the file, the site and the rule.
func TestRun_BadSitesFileRefusedBeforeAnyClaim(t *testing.T) {
	for name, tc := range map[string]struct{ pattern, want string }{
		"repeat bomb":   {`(a{1000}){1000}`, "invalid repeat count"},
		"nested repeat": {`((((a{100}){100}){100}){100})`, "site T1_B: rule 1"},
		"unclosed":      {`/store/(.*`, "missing closing )"},
	} {
		t.Run(name, func(t *testing.T) {
			st := newState(t)
			sites := filepath.Join(t.TempDir(), "sites.yaml")
			body := "T2_A:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file:///a/store/$1\n" +
				"T1_B:\n  protocol: file\n  rules:\n    - path-match: \"" + tc.pattern + "\"\n      result: file:///b/$1\n"
			if err := os.WriteFile(sites, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			in := `{"size": 1, "user": "uma", "source": "T2_A", "destination": "T1_B", "source_lfn": "/store/a", "destination_lfn": "/store/a"}` + "\n"
			invocation{stdin: strings.NewReader(in)}.run(t, st, "enqueue").wantCode(t, 0)
			r := aso(t, st, "--user", "uma", "run", "--sites", sites, "--once").wantCode(t, cmd.ExitConfig)
			for _, want := range []string{sites, "site T1_B: rule 1", tc.want} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if got := statusOf(t, st, "--user", "uma"); count(t, got, state.StateNew) != 1 {
				t.Errorf("a transfer was claimed by a run that should not have started: %v", got["by_state"])
			}
		})
	}
}
