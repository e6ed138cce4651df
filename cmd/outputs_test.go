package cmd_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// TestOutputs_NeverOverwriteInputs is issue 43's case 4: every path aso
// writes (run's --report and --metrics-file, also with --dry-run, purge's
// --archive, fsck's --repair --output, man's pages) is refused before any
// work when it is the store (by its name, through a link to it or to its
// directory, or its compaction file), the sites file or the configuration
// file, or when it cannot be written; each exits 64 with the flag and the
// file named, and the store, the sites file and the configuration file are
// unchanged and the store still opens.
func TestOutputs_NeverOverwriteInputs(t *testing.T) {
	sites, requests, _ := localSites(t, 3)
	dir := t.TempDir()
	store := filepath.Join(dir, "s.aso")
	st := "--state=file:" + store
	createStore(t, st)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	config := filepath.Join(dir, "aso.yaml")
	if err := os.WriteFile(config, []byte("log-level: info\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	storeLink, dirLink := filepath.Join(links, "store-link"), filepath.Join(links, "dir-link")
	for target, link := range map[string]string{store: storeLink, dir: dirLink} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	manDir := t.TempDir()
	if err := os.Symlink(config, filepath.Join(manDir, "aso-run.1")); err != nil {
		t.Fatal(err)
	}
	inputs := []string{store, sites, config}
	before := readAll(t, inputs)
	run := []string{"run", st, "--config", config, "--user", "bob", "--sites", sites, "--dry-run"}
	purge := []string{"purge", st, "--config", config, "--user", "bob", "--older-than", "1s", "--yes"}
	fsck := []string{"fsck", st, "--config", config, "--repair"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"report is the store", append(run, "--report", store), "--report " + store + " is the state file"},
		{"report through a link to the store", append(run, "--report", storeLink), "is the state file"},
		{"report through a link to its directory", append(run, "--report", dirLink+"/s.aso"), "is the state file"},
		{"report is the compaction file", append(run, "--report", store+".compact"), "is a file of the state store"},
		{"metrics file is the store", append(run, "--metrics-file", store), "--metrics-file " + store + " is the state file"},
		{"metrics file through a link", append(run, "--metrics-file", storeLink), "is the state file"},
		{"report is the sites file", append(run, "--report", sites), "is the sites file"},
		{"metrics file is the configuration file", append(run, "--metrics-file", config), "is the configuration file"},
		{"report in a missing directory", append(run, "--report", filepath.Join(dir, "no", "r.json")), "cannot be written"},
		{"metrics file is a directory", append(run, "--metrics-file", dir), "cannot be written: it is a directory"},
		{"archive is the store", append(purge, "--archive", store), "--archive " + store + " is the state file"},
		{"archive through a link", append(purge, "--archive", dirLink+"/./s.aso"), "is the state file"},
		{"archive in a missing directory", append(purge, "--archive", filepath.Join(dir, "no", "a.jsonl")), "cannot be written"},
		{"repaired file is the store", append(fsck, "--output", storeLink), "--output " + storeLink + " is the state file"},
		{"man page is the configuration file", []string{"man", st, "--config", config, manDir}, "aso-run.1 is the configuration file"},
		{"man directory is the store", []string{"man", st, "--config", config, store}, store + " is not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := aso(t, c.args...).wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, r.stderr)
			}
			for i, b := range readAll(t, inputs) {
				if !bytes.Equal(b, before[i]) {
					t.Fatalf("%s changed: %d bytes, was %d", inputs[i], len(b), len(before[i]))
				}
			}
		})
	}
	wantQueue(t, map[state.State]int{state.StateNew: 3}, st, "--user", "bob")
}

// readAll returns the contents of the files at paths.
func readAll(t testing.TB, paths []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}
