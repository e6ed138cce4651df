package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMissingStore_EveryCommandRefuses: only init creates a file store.
// Every other command given a store that does not exist (a typo in
// --state, or the default store before init) exits 78, naming the path and
// aso init, and creates nothing: neither the file nor its directory.
func TestMissingStore_EveryCommandRefuses(t *testing.T) {
	sites, requests, _ := localSites(t, 1)
	id := strings.Repeat("ab", 32)
	commands := [][]string{
		{"run", "--sites", sites, "--once", "--progress", "never"},
		{"run", "--sites", sites, "--dry-run"},
		{"run", "--all-users", "--sites", sites, "--once"},
		{"enqueue", "-f", requests},
		{"kill", id}, {"kill", "--all"},
		{"retry", id}, {"retry", "--failed"},
		{"purge", "--older-than", "1h"},
		{"unlock", "alice"},
		{"status"}, {"status", id}, {"list"},
		{"fsck"},
	}
	for _, args := range commands {
		dir := filepath.Join(t.TempDir(), "typo")
		path := filepath.Join(dir, "state.aso")
		r := invocation{env: map[string]string{"USER": "alice"}}.run(t, append([]string{"--state=file:" + path}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{"no such state file", path, "aso init --state file:" + path} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v on a missing store: stderr %q lacks %q", args, r.stderr, want)
			}
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v created %s: %v", args, dir, err)
		}
	}

	// the default store, before init
	home := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": home, "USER": "alice"}
	path := filepath.Join(home, "aso", "state.aso")
	r := invocation{env: env}.run(t, "status").wantCode(t, cmd.ExitConfig)
	if !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "aso init") {
		t.Errorf("status on the missing default store: stderr %q", r.stderr)
	}
	invocation{env: env}.run(t, "init").wantCode(t, 0).wantStdout(t, "created the file store "+path)
	invocation{env: env}.run(t, "status").wantCode(t, 0)
}

// TestReadOnlyCommands: status and list read a store they may not write.
func TestReadOnlyCommands(t *testing.T) {
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

// TestMissingStore_CouchDatabase: a CouchDB database that does not exist
// is refused as a missing file store is: exit 78, naming aso init.
func TestMissingStore_CouchDatabase(t *testing.T) {
	sites, requests, _ := localSites(t, 1)
	st := "--state=" + couchtest.Server(t) + couchtest.NewName()
	for _, args := range [][]string{
		{"run", "--sites", sites, "--once", "--progress", "never", "--fts", "local"},
		{"enqueue", "-f", requests},
		{"status"},
		{"unlock", "alice"},
	} {
		r := invocation{env: map[string]string{"USER": "alice"}}.run(t, append([]string{st}, args...)...).wantCode(t, cmd.ExitConfig)
		if !strings.Contains(r.stderr, "database does not exist") || !strings.Contains(r.stderr, "aso init") {
			t.Errorf("%v on a missing database: stderr %q, want it named and aso init", args, r.stderr)
		}
	}
}

// TestRun_CouchNeedsFTS: the simulator is the default FTS of a file store
// only. A run on CouchDB whose --fts was given nowhere exits 78 with the
// reason, before it reads the store; --fts, ASO_FTS or fts: in the
// configuration file each count as given, local included.
func TestRun_CouchNeedsFTS(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	st := "--state=" + couchtest.Server(t) + couchtest.NewName()
	env := map[string]string{"USER": "alice", "ASO_CONFIG": ""}
	for _, args := range [][]string{
		{"run", "--sites", sites, "--once", "--progress", "never"},
		{"run", "--all-users", "--sites", sites, "--once"},
	} {
		r := invocation{env: env}.run(t, append([]string{st}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{"no FTS server chosen for the CouchDB store", "--fts https://HOST:8446", "--fts local"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v without --fts: stderr %q lacks %q", args, r.stderr, want)
			}
		}
		if strings.Contains(r.stderr, "database does not exist") {
			t.Errorf("%v without --fts read the store: %q", args, r.stderr)
		}
	}
	conf := filepath.Join(t.TempDir(), "aso.yaml")
	if err := os.WriteFile(conf, []byte("fts: local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, inv := range map[string]invocation{
		"ASO_FTS":          {env: map[string]string{"USER": "alice", "ASO_CONFIG": "", "ASO_FTS": "local"}},
		"fts: in the file": {env: map[string]string{"USER": "alice", "ASO_CONFIG": conf}},
	} {
		r := inv.run(t, st, "run", "--sites", sites, "--once", "--progress", "never").wantCode(t, cmd.ExitConfig)
		if !strings.Contains(r.stderr, "database does not exist") {
			t.Errorf("--fts from %s: stderr %q, want the store's own refusal", name, r.stderr)
		}
	}
}
