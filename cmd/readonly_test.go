package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyCommands: status and list never create a store, and read one
// they may not write.
func TestReadOnlyCommands(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "stat.aso")
	for _, args := range [][]string{{"status"}, {"list"}, {"status", "deadbeefdeadbeef"}} {
		r := aso(t, append([]string{"--state=file:" + typo, "--user", "alice"}, args...)...).wantCode(t, 1)
		if !strings.Contains(r.stderr, "no such state file") {
			t.Errorf("%v on a missing store: stderr %q", args, r.stderr)
		}
		if _, err := os.Stat(typo); !os.IsNotExist(err) {
			t.Fatalf("%v created the store: %v", args, err)
		}
	}
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	aso(t, flag, "--user", "alice", "status").wantCode(t, 0).wantStdout(t, "3")
	if ids := listIDs(t, flag, "--user", "alice", "list"); len(ids) != 3 {
		t.Fatalf("list of a read-only store: %v", ids)
	}
}
