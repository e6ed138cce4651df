package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/srm"
)

func TestRm(t *testing.T) {
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("gfal-rm is needed for this test: %s", srm.GfalRmInstallHint())
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b c")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("all deleted", func(t *testing.T) {
		r := aso(t, "rm", "--timeout", "30s", "file://"+a, "file://"+filepath.Join(dir, "none")).wantCode(t, 0)
		if want := "file://" + a + "\tDELETED\nfile://" + filepath.Join(dir, "none") + "\tMISSING\n"; r.stdout != want {
			t.Fatalf("stdout %q, want %q", r.stdout, want)
		}
		if _, err := os.Stat(a); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", a, err)
		}
	})

	t.Run("a failure exits 1 and the rest are deleted", func(t *testing.T) {
		r := aso(t, "rm", "mock://h/p?errno=13", "file://"+b, "not-a-url").wantCode(t, 1)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("stdout %q, want 3 lines", r.stdout)
		}
		for i, prefix := range []string{"mock://h/p?errno=13\tFAILED\tPermission denied", "file://" + b + "\tDELETED", "not-a-url\tFAILED\tnot a URL"} {
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("line %d %q, want prefix %q", i, lines[i], prefix)
			}
		}
		if !strings.Contains(r.stderr, "2 of 3 not deleted") {
			t.Errorf("stderr %q", r.stderr)
		}
		if _, err := os.Stat(b); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", b, err)
		}
	})

	t.Run("usage", func(t *testing.T) {
		aso(t, "rm").wantCode(t, cmd.ExitUsage)
		if r := aso(t, "rm", "--timeout", "0s", "file://"+a).wantCode(t, cmd.ExitUsage); !strings.Contains(r.stderr, "--timeout") {
			t.Fatalf("stderr %q does not mention --timeout", r.stderr)
		}
	})
}
