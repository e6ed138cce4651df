package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
)

// TestFileStore_DirectoryOrNotWritable: a directory given as the store, and
// a store this user may not write given to a command that writes, exit 78
// (a person must fix it) with the path once and what is wrong with it.
func TestFileStore_DirectoryOrNotWritable(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"status"}, {"enqueue"}, {"kill", "--all", "--yes"}, {"init"}} {
		r := aso(t, append([]string{"--user", "alice", "--state", "file:" + dir}, args...)...).wantCode(t, cmd.ExitConfig)
		if strings.Count(r.stderr, dir) != 2 || !strings.Contains(r.stderr, "is a directory, not a state file") ||
			!strings.Contains(r.stderr, "aso init --state file:"+filepath.Join(dir, "state.aso")) {
			t.Errorf("%v on a directory: stderr %q, want the path once, that it is a directory, and the file init would create", args, r.stderr)
		}
	}

	// a store another user owns: as root, the commands run as nobody
	top, err := os.MkdirTemp("", "aso-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	path := filepath.Join(top, "state.aso")
	aso(t, "--state", "file:"+path, "init").wantCode(t, 0)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result { return aso(t, args...) }
	if os.Getuid() == 0 {
		bin := filepath.Join(top, "aso")
		if b, err := os.ReadFile(proctest.Binary(t)); err != nil || os.WriteFile(bin, b, 0o755) != nil {
			t.Fatalf("copy aso: %v", err)
		}
		if err := os.Chmod(top, 0o755); err != nil {
			t.Fatal(err)
		}
		run = func(args ...string) result {
			c := exec.Command(bin, args...)
			c.Env = []string{"HOME=" + top, "ASO_CONFIG="}
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var out, errb strings.Builder
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return result{code: code, stdout: out.String(), stderr: errb.String()}
		}
	}
	for _, args := range [][]string{{"enqueue"}, {"unlock", "alice"}, {"kill", "--all", "--yes"}} {
		r := run(append([]string{"--user", "alice", "--state", "file:" + path}, args...)...).wantCode(t, cmd.ExitConfig)
		if strings.Count(r.stderr, path) != 1 || !strings.Contains(r.stderr, "cannot be written (permission denied)") {
			t.Errorf("%v on a store this user may not write: stderr %q, want the path once and that it cannot be written", args, r.stderr)
		}
	}
	run("--user", "alice", "--state", "file:"+path, "status").wantCode(t, 0) // reading needs no write
}
