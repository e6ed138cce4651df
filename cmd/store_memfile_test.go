package cmd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

func TestOpenStore_File(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new", "dir", "state.aso")
	cfg := state.Config{Agent: state.Agent{User: "alice", Owner: "test"}}
	missing := &cmd.Globals{StateURL: "file:" + path, LookupEnv: func(string) (string, bool) { return "", false }}
	if _, err := missing.OpenStore(ctx, cfg); !errors.Is(err, memfile.ErrNoStore) || cmd.ExitCode(err) != cmd.ExitConfig {
		t.Fatalf("open of a missing store: %v (exit %d), want ErrNoStore, exit %d", err, cmd.ExitCode(err), cmd.ExitConfig)
	}
	if _, err := memfile.Create(path); err != nil {
		t.Fatal(err)
	}
	r := state.Request{User: "alice", Source: "T2_A", Destination: "T1_B", SourceLFN: "/a", DestinationLFN: "/b"}
	for i, url := range []string{"file:" + path, "file://" + path} {
		g := &cmd.Globals{StateURL: url, LookupEnv: func(string) (string, bool) { return "", false }}
		s, err := g.OpenStore(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		res, err := s.Enqueue(ctx, []state.Request{r})
		want := []state.EnqueueStatus{state.Stored, state.AlreadyQueued}[i]
		if err != nil || res[0].Status != want {
			t.Fatalf("%s: enqueue %+v %v, want %s (the same file)", url, res, err, want)
		}
		s.Close()
	}
	g := &cmd.Globals{StateURL: "file:", LookupEnv: func(string) (string, bool) { return "", false }}
	if _, err := g.OpenStore(ctx, cfg); cmd.ExitCode(err) != cmd.ExitUsage {
		t.Fatalf("file: without a path: %v (exit %d), want a usage error", err, cmd.ExitCode(err))
	}
}

// TestEmptyFileIsNotAStore: an existing empty file given as --state
// file:PATH is not a store (issue 43, section 5): every command but
// init exits 78 saying to run aso init, and leaves it empty; aso init
// makes a store of it.
func TestEmptyFileIsNotAStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.aso")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	flag := "--state=file:" + path
	sites, _, _ := localSites(t, 1)
	for _, args := range [][]string{{"status"}, {"list"}, {"enqueue"}, {"kill", "--all"}, {"fsck"},
		{"run", "--sites", sites}, {"purge", "--older-than", "1h", "--yes"}, {"verify"}} {
		r := invocation{stdin: strings.NewReader(extraRequests)}.run(t, append([]string{flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{path + " is an empty file, not a store yet", "aso init --state file:" + path} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
			}
		}
		if strings.Contains(r.stderr, "no such state file") || strings.Contains(r.stderr, "does not exist") {
			t.Errorf("%v: an empty file called missing: %s", args, r.stderr)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Fatalf("%v changed the empty file: %v, %v", args, fi, err)
		}
	}
	aso(t, flag, "init").wantCode(t, 0).wantStdout(t, "created the file store "+path)
	aso(t, flag, "--user", "alice", "status").wantCode(t, 0)
}
