package cmd_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// TestScope_CommandLineOnly: --all, --all-users and --older-than widen what
// a command destroys or reaches; from the environment or the configuration
// file they are refused (64, naming the setting), and nothing is killed or
// purged; on the command line they work.
func TestScope_CommandLineOnly(t *testing.T) {
	q := newQueue(t)
	killed := count(t, statusOf(t, q.flag, "--user", "alice"), state.StateKilled)
	allFile := writeConfig(t, "all: true\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"ASO_ALL", map[string]string{"ASO_ALL": "1"}, []string{"--user", "alice", "kill", "--yes"}, "--all (from ASO_ALL)"},
		{"all: true", map[string]string{"ASO_CONFIG": allFile}, []string{"--user", "alice", "kill", "--yes"}, "--all (from config file " + allFile + ")"},
		{"ASO_ALL_USERS for kill", map[string]string{"ASO_ALL_USERS": "true"}, []string{"kill", "--all", "--yes"}, "--all-users (from ASO_ALL_USERS)"},
		{"ASO_ALL_USERS for a read", map[string]string{"ASO_ALL_USERS": "true"}, []string{"status"}, "--all-users (from ASO_ALL_USERS)"},
		{"ASO_OLDER_THAN", map[string]string{"ASO_OLDER_THAN": "1ns"}, []string{"--user", "alice", "purge", "--yes"}, "--older-than (from ASO_OLDER_THAN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invocation{env: tc.env}.run(t, append([]string{q.flag}, tc.args...)...).wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "command line only") {
				t.Errorf("stderr %q, want %q and the command line named", r.stderr, tc.want)
			}
		})
	}
	if n := count(t, statusOf(t, q.flag, "--user", "alice"), state.StateKilled); n != killed {
		t.Fatalf("%d of alice's transfers killed by a scope from the environment or the file", n-killed)
	}
	r := invocation{env: map[string]string{"ASO_CONFIG": allFile}}.run(t, q.flag, "config").wantCode(t, cmd.ExitUsage)
	wantMatch(t, r.stdout, `(?m)^kill\s+all\s+true\s+command line only$`, `(?m)^purge\s+older-than\s+0s\s+command line only$`)
	aso(t, q.flag, "--user", "alice", "kill", "--all", "--yes").wantCode(t, 0)
	if n := count(t, statusOf(t, q.flag, "--user", "alice"), state.StateKilled); n == killed {
		t.Fatal("kill --all on the command line killed nothing")
	}
}
