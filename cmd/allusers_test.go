package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestAllUsers_OverridesAConfiguredUser: a user from ASO_USER or the
// configuration file is a default that --all-users overrides, in every
// command that takes it; --user given on the command line with
// --all-users is a usage error everywhere.
func TestAllUsers_OverridesAConfiguredUser(t *testing.T) {
	q := newQueue(t)
	all := len(listIDs(t, q.flag, "list", "--all-users"))
	if mine := len(listIDs(t, q.flag, "--user", "alice", "list")); mine == 0 || mine == all {
		t.Fatalf("the queue holds %d transfers of alice among %d: want some of other users", mine, all)
	}
	conf := filepath.Join(t.TempDir(), "aso.yaml")
	if err := os.WriteFile(conf, []byte("user: alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		iv   invocation
		pre  []string
	}{
		{"ASO_USER", invocation{env: map[string]string{"ASO_USER": "alice"}}, nil},
		{"config file", invocation{}, []string{"--config", conf}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(args ...string) result {
				return c.iv.run(t, append(append([]string{q.flag}, c.pre...), args...)...)
			}
			if r := run("list", "--all-users", "--json").wantCode(t, 0); len(transferLines(t, r.stdout)) != all {
				t.Errorf("list --all-users: %d transfers, want every user's %d", len(transferLines(t, r.stdout)), all)
			}
			run("status", "--all-users").wantCode(t, 0)
			run("kill", "--all-users", "--in-state", "new", "--lfn", "/no/such/*").wantCode(t, 0)
			run("retry", "--all-users", "--lfn", "/no/such/*").wantCode(t, 0)
			run("purge", "--all-users", "--older-than", "1000h").wantCode(t, 0)
			// the fleet goes past its usage checks to the missing sites file
			run("run", "--all-users", "--sites", filepath.Join(t.TempDir(), "none.yaml")).wantCode(t, cmd.ExitConfig)
		})
	}
	for _, args := range [][]string{
		{"list", "--all-users"}, {"status", "--all-users"}, {"purge", "--all-users", "--older-than", "1000h"},
		{"kill", "--all-users", "--in-state", "new"}, {"retry", "--all-users", "--in-state", "failed"},
		{"run", "--all-users", "--sites", filepath.Join(t.TempDir(), "none.yaml")},
	} {
		r := aso(t, append([]string{q.flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitUsage)
		if !strings.Contains(r.stderr, "--all-users") {
			t.Errorf("%v with --user: %q, want a message naming --all-users", args, r.stderr)
		}
	}
}
