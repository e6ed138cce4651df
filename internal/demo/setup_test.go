package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetup_DemoInstallsOnlyWhatItUses: on a machine with none of the
// tools, scripts/test-setup demo (make demo, make tour) would install gfal-rm
// and nothing of the test toolchain, which plain scripts/test-setup would.
func TestSetup_DemoInstallsOnlyWhatItUses(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "id"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	// apt-get is there (it is not run: ASO_TEST_SETUP_DRY); gfal-rm, node,
	// npm, chromium, promtool and stress-ng are not
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := func(args ...string) string {
		t.Helper()
		c := exec.Command(filepath.Join("..", "..", "scripts", "test-setup"), args...)
		c.Env = []string{"PATH=" + bin, "ASO_TEST_SETUP_DRY=1"}
		out, err := c.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "install") {
			t.Fatalf("test-setup %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	demo, all := setup("demo"), setup()
	if os.Getuid() != 0 {
		// not root: it prints the command to run instead
		demo, all = lastLine(demo), lastLine(all)
	}
	if !strings.Contains(demo, "gfal2-util-scripts") {
		t.Errorf("test-setup demo does not install gfal-rm:\n%s", demo)
	}
	toolchain := []string{"nodejs", "npm", "chromium", "prometheus", "stress-ng"}
	for _, tool := range append(toolchain, "gfal2-plugin-mock", "gfal2-plugin-http", "npm ci") {
		if strings.Contains(demo, tool) {
			t.Errorf("test-setup demo would install %s, which the demo does not use:\n%s", tool, demo)
		}
	}
	for _, tool := range toolchain {
		if !strings.Contains(all, tool) {
			t.Errorf("test-setup would not install %s for the tests:\n%s", tool, all)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
