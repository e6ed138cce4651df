package cmd_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
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

	st := newState(t)
	t.Run("all deleted", func(t *testing.T) {
		r := aso(t, "rm", st, "--timeout", "30s", "file://"+a, "file://"+filepath.Join(dir, "none")).wantCode(t, 0)
		if want := "file://" + a + "\tDELETED\nfile://" + filepath.Join(dir, "none") + "\tMISSING\n"; r.stdout != want {
			t.Fatalf("stdout %q, want %q", r.stdout, want)
		}
		if _, err := os.Stat(a); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", a, err)
		}
	})

	t.Run("a failure exits 1 and the rest are deleted", func(t *testing.T) {
		r := aso(t, "rm", st, "mock://h/p?errno=13", "file://"+b, "not-a-url").wantCode(t, 1)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("stdout %q, want 3 lines", r.stdout)
		}
		for i, prefix := range []string{"mock://h/p?errno=13\tFAILED\tPermission denied", "file://" + b + "\tDELETED", "not-a-url\tFAILED\tnot a URL"} {
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("line %d %q, want prefix %q", i, lines[i], prefix)
			}
		}
		if !strings.Contains(r.stderr, "2 of 3 not deleted") {
			t.Errorf("stderr %q", r.stderr)
		}
		if _, err := os.Stat(b); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", b, err)
		}
	})

	t.Run("usage", func(t *testing.T) {
		aso(t, "rm").wantCode(t, cmd.ExitUsage)
		if r := aso(t, "rm", st, "--timeout", "0s", "file://"+a).wantCode(t, cmd.ExitUsage); !strings.Contains(r.stderr, "--timeout") {
			t.Fatalf("stderr %q does not mention --timeout", r.stderr)
		}
	})
}

// TestRm_RefusesWhatATransferNames: aso rm does not delete a PFN that a
// done transfer names or that an active transfer reads or writes: it is
// REFUSED, naming the transfer (ID, user, state) and its role, the exit
// is 1, and the other PFNs are deleted (a failed transfer's destination
// among them). --force deletes it. Without a store to read, rm refuses
// to run unless --force is given.
func TestRm_RefusesWhatATransferNames(t *testing.T) {
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("gfal-rm is needed for this test: %s", srm.GfalRmInstallHint())
	}
	dir := t.TempDir()
	flag, path := stateFile(t)
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		return "file://" + p
	}
	doneDst, activeSrc, failedDst, free := file("done.root"), file("active-src.root"), file("failed.root"), file("free.root")
	ids := storeTransfers(t, path, []transferAt{
		{file("done-src.root"), doneDst, state.OutcomeDone},
		{activeSrc, file("active-dst.root"), ""},
		{file("failed-src.root"), failedDst, state.OutcomeFailed},
	})

	r := aso(t, "rm", flag, doneDst, activeSrc, failedDst, free).wantCode(t, 1)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := []string{
		doneDst + "\tREFUSED\trefused: transfer " + ids[0] + " (user alice, done) names it as its destination; --force deletes it anyway",
		activeSrc + "\tREFUSED\trefused: transfer " + ids[1] + " (user alice, submitted) names it as its source; --force deletes it anyway",
		failedDst + "\tDELETED", free + "\tDELETED",
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout %q, want %d lines", r.stdout, len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d %q, want %q", i, lines[i], want[i])
		}
	}
	for _, u := range []string{doneDst, activeSrc} {
		if _, err := os.Stat(strings.TrimPrefix(u, "file://")); err != nil {
			t.Errorf("%s was deleted: %v", u, err)
		}
	}
	for _, u := range []string{failedDst, free} {
		if _, err := os.Stat(strings.TrimPrefix(u, "file://")); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", u, err)
		}
	}
	if !strings.Contains(r.stderr, "2 of 4 not deleted") {
		t.Errorf("stderr %q, want 2 of 4 not deleted", r.stderr)
	}

	aso(t, "rm", flag, "--force", doneDst).wantCode(t, 0).wantStdout(t, doneDst+"\tDELETED")
	missing := "--state=file:" + filepath.Join(dir, "none.aso")
	if r := aso(t, "rm", missing, activeSrc).wantCode(t, cmd.ExitConfig); !strings.Contains(r.stderr, "--force") {
		t.Errorf("without a store: stderr %q, want it to name --force", r.stderr)
	}
	if _, err := os.Stat(strings.TrimPrefix(activeSrc, "file://")); err != nil {
		t.Errorf("without a store, %s was deleted: %v", activeSrc, err)
	}
}

// transferAt is a transfer of alice submitted with these PFNs, then ended
// with outcome ("": left submitted).
type transferAt struct {
	src, dst string
	outcome  state.Outcome
}

// storeTransfers writes ts into the file store at path and returns their
// IDs.
func storeTransfers(t *testing.T, path string, ts []transferAt) []string {
	t.Helper()
	ctx := context.Background()
	st, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "alice", Owner: "worker:1:test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := make([]string, len(ts))
	for i, x := range ts {
		req := statetest.Req("alice", i)
		if _, err := st.Enqueue(ctx, []state.Request{req}); err != nil {
			t.Fatal(err)
		}
		claimed, err := statetest.Claim(ctx, st, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v, %d", err, len(claimed))
		}
		job := fmt.Sprintf("job-%d", i)
		if _, err := statetest.Commit(ctx, st, []state.Commit{{Transfer: claimed[0], SourcePFN: x.src, DestPFN: x.dst, FileID: 1}}, job); err != nil {
			t.Fatal(err)
		}
		ids[i] = claimed[0].ID
		if x.outcome == "" {
			continue
		}
		tr, err := st.Get(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: x.outcome, Reason: "SOURCE [2] gone", FTSJob: job}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("terminal: %v %v", err, res)
		}
	}
	return ids
}
