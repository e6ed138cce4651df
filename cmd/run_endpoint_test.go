package cmd_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
)

// TestRun_JobsStayWithTheirEndpoint: a run with --fts A leaves its jobs
// active; the next run, with --fts B, finishes them on A and submits
// nothing to B (before, every job looked lost on B and was copied again).
func TestRun_JobsStayWithTheirEndpoint(t *testing.T) {
	sites, requests, dst := localSites(t, 6)
	st := newState(t)
	tokenFile := endpointToken(t)
	simA := ftstest.NewServer(t, ftstest.Options{LocalFiles: true, Tokens: []string{"endpoint-token"}, TransferTime: 2 * time.Second})
	simB := ftstest.NewServer(t, ftstest.Options{LocalFiles: true, Tokens: []string{"endpoint-token"}})
	aso(t, "enqueue", st, "--user", "bob", "-f", requests).wantCode(t, 0)
	run := func(url string, more ...string) {
		args := append([]string{"run", st, "--user", "bob", "--sites", sites, "--fts", url, "--insecure", "--token-file", tokenFile,
			"--interval", "100ms", "--max-runtime", "60s", "--progress", "never"}, more...)
		aso(t, args...).wantCode(t, 0)
	}
	run(simA.URL, "--once")
	if n := len(simA.Files()); n != 6 {
		t.Fatalf("%d files on A after the first run, want 6", n)
	}
	run(simB.URL + "/")
	if n := len(simA.Files()); n != 6 {
		t.Errorf("%d files on A after the second run, want the same 6", n)
	}
	if n := simB.Requests()["submit"]; n != 0 {
		t.Errorf("%d submissions to B: the jobs on A were submitted again", n)
	}
	for _, f := range simA.Files() {
		if f.State != "FINISHED" {
			t.Errorf("file %s on A is %s, want FINISHED", f.Destination, f.State)
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil || len(entries) != 6 {
		t.Errorf("%d destination files (%v), want 6", len(entries), err)
	}
	statusOut := aso(t, st, "--user", "bob", "status", "--json").wantCode(t, 0).stdout
	wantMatch(t, statusOut, `"done": 6`)
}

// TestRun_JobsOfAnEarlierLocalSimulator: the in-process simulator of an
// earlier run ended with it, so its unfinished jobs are lost and their
// transfers go to the --fts of the next run.
func TestRun_JobsOfAnEarlierLocalSimulator(t *testing.T) {
	sites, requests, dst := localSites(t, 4)
	st := newState(t)
	tokenFile := endpointToken(t)
	simB := ftstest.NewServer(t, ftstest.Options{LocalFiles: true, Tokens: []string{"endpoint-token"}})
	aso(t, "enqueue", st, "--user", "bob", "-f", requests).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--once", "--sim-transfer-time", "1h", "--progress", "never").wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--fts", simB.URL, "--insecure", "--token-file", tokenFile,
		"--interval", "100ms", "--max-runtime", "60s", "--progress", "never").wantCode(t, 0)
	if n := len(simB.Files()); n != 4 {
		t.Errorf("%d files on B, want the 4 whose local jobs ended with their run", n)
	}
	entries, err := os.ReadDir(dst)
	if err != nil || len(entries) != 4 {
		t.Errorf("%d destination files (%v), want 4", len(entries), err)
	}
	wantMatch(t, aso(t, st, "--user", "bob", "status", "--json").wantCode(t, 0).stdout, `"done": 4`)
}

// endpointToken writes the token the tests' simulators accept to a file.
func endpointToken(t *testing.T) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("endpoint-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokenFile
}
