package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestRun_ChecksTheMachineFirst: a missing gfal-rm stops aso run at once,
// with the install commands of Debian and RHEL, before any transfer is
// claimed.
func TestRun_ChecksTheMachineFirst(t *testing.T) {
	sites, requests, _ := localSites(t, 3)
	st := newState(t)
	aso(t, st, "--user", "bob", "enqueue", "-f", requests).wantCode(t, 0)
	r := aso(t, st, "--user", "bob", "run", "--sites", sites, "--once", "--gfal-rm", filepath.Join(t.TempDir(), "gfal-rm")).wantCode(t, cmd.ExitConfig)
	for _, want := range []string{"apt-get install gfal2-util-scripts", "dnf install gfal2-util-scripts"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Count(r.stderr, "\n") > 3 {
		t.Errorf("more than the error was written:\n%s", r.stderr)
	}
	aso(t, st, "--user", "bob", "status", "--json").wantCode(t, 0).wantStdout(t, `"new": 3`)

	// gfal-rm without gfal-stat and gfal-sum, neither beside it nor in PATH
	lone := t.TempDir()
	if err := os.Symlink("/usr/bin/gfal-rm", filepath.Join(lone, "gfal-rm")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", lone)
	r = aso(t, st, "--user", "bob", "run", "--sites", sites, "--once", "--gfal-rm", filepath.Join(lone, "gfal-rm")).wantCode(t, cmd.ExitConfig)
	for _, want := range []string{"gfal-stat: ", "gfal-sum: ", "reads the file FTS finds at a destination (taken from the directory of --gfal-rm, else from PATH)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/bin:/bin")
	aso(t, st, "--user", "bob", "status", "--json").wantCode(t, 0).wantStdout(t, `"new": 3`)

	// A sites file reaching storage over TLS needs a CA directory with
	// certificates, for gfal-rm.
	tls := filepath.Join(t.TempDir(), "sites.yaml")
	if err := os.WriteFile(tls, []byte("T2_XX_A:\n  protocol: davs\n  rules:\n    - path-match: /(.*)\n      result: davs://se.example/$1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	r = aso(t, st, "--user", "bob", "run", "--sites", tls, "--once", "--cert-dir", empty).wantCode(t, cmd.ExitConfig)
	if !strings.Contains(r.stderr, "CA directory "+empty+" holds no certificate") {
		t.Errorf("stderr lacks the empty CA directory:\n%s", r.stderr)
	}
	aso(t, st, "--user", "bob", "status", "--json").wantCode(t, 0).wantStdout(t, `"new": 3`)
}
