package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
		code, stdout, stderr := execAso(t, "rm", "--timeout", "30s", "file://"+a, "file://"+filepath.Join(dir, "none"))
		want := "file://" + a + "\tDELETED\nfile://" + filepath.Join(dir, "none") + "\tMISSING\n"
		if code != 0 || stdout != want {
			t.Fatalf("exit %d, stdout %q; want 0, %q\nstderr: %s", code, stdout, want, stderr)
		}
		if _, err := os.Stat(a); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", a, err)
		}
	})

	t.Run("a failure exits 1 and the rest are deleted", func(t *testing.T) {
		code, stdout, stderr := execAso(t, "rm", "mock://h/p?errno=13", "file://"+b, "not-a-url")
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if code != 1 || len(lines) != 3 {
			t.Fatalf("exit %d, stdout %q; want 1 and 3 lines\nstderr: %s", code, stdout, stderr)
		}
		for i, prefix := range []string{"mock://h/p?errno=13\tFAILED\tPermission denied", "file://" + b + "\tDELETED", "not-a-url\tFAILED\tnot a URL"} {
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("line %d %q, want prefix %q", i, lines[i], prefix)
			}
		}
		if !strings.Contains(stderr, "2 of 3 not deleted") {
			t.Errorf("stderr %q", stderr)
		}
		if _, err := os.Stat(b); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", b, err)
		}
	})

	t.Run("usage", func(t *testing.T) {
		if code, _, stderr := execAso(t, "rm"); code != 2 {
			t.Fatalf("exit %d without arguments, want 2; stderr %s", code, stderr)
		}
		if code, _, stderr := execAso(t, "rm", "--timeout", "0s", "file://"+a); code != 2 || !strings.Contains(stderr, "--timeout") {
			t.Fatalf("exit %d with --timeout 0, want 2; stderr %s", code, stderr)
		}
	})
}
