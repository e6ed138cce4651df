package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/srm/davtest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// doneWorld is a file store whose done transfers of alice copied files
// from src to the URLs dest gives.
type doneWorld struct {
	flag, path string
	src, dst   string
	dest       func(name string) string
}

func newDoneWorld(t *testing.T) *doneWorld {
	t.Helper()
	flag, path := stateFile(t)
	w := &doneWorld{flag: flag, path: path, src: t.TempDir(), dst: t.TempDir()}
	w.dest = func(name string) string { return "file://" + filepath.Join(w.dst, name) }
	return w
}

var payload = []byte("the payload of a physics file\n")

// done records a done transfer of name (size and adler32 of payload),
// writes dst at its destination and src at its source (nil: nothing), and
// returns its ID.
func (w *doneWorld) done(t *testing.T, name string, dst, src []byte) string {
	t.Helper()
	ctx := context.Background()
	st, err := memfile.Open(w.path, state.Config{Agent: state.Agent{User: "alice", Owner: "worker:1:test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := state.Request{User: "alice", Source: "T2_A", Destination: "T2_B", SourceLFN: "/store/temp/" + name, DestinationLFN: "/store/user/" + name,
		Size: int64(len(payload)), Checksums: map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(payload))}}
	if _, err := st.Enqueue(ctx, []state.Request{r}); err != nil {
		t.Fatal(err)
	}
	ts, err := statetest.Claim(ctx, st, 1)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	job := "job-" + name
	if res, err := statetest.Commit(ctx, st, []state.Commit{{Transfer: ts[0], SourcePFN: "file://" + filepath.Join(w.src, name), DestPFN: w.dest(name), FileID: 1}}, job); err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	tr, _ := st.Get(ctx, ts[0].ID)
	if res, err := st.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: job}}); err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	for dir, data := range map[string][]byte{w.dst: dst, w.src: src} {
		if data != nil {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tr.ID
}

func (w *doneWorld) get(t *testing.T, id string) state.Transfer {
	t.Helper()
	st, err := memfile.Open(w.path, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func (w *doneWorld) verify(t *testing.T, args ...string) result {
	t.Helper()
	return aso(t, append([]string{"verify", w.flag, "--user", "alice", "--progress", "never", "--log-level", "error"}, args...)...)
}

// TestVerify_ExitCodes: 0 when every file is there, 1 when one is missing
// or differs (also beside an unreadable one), 75 when none is missing or
// differs but one could not be read; each transfer on a line, then the
// totals.
func TestVerify_ExitCodes(t *testing.T) {
	requireGfalTools(t)
	w := newDoneWorld(t)
	good := w.done(t, "good.root", payload, nil)
	r := w.verify(t).wantCode(t, cmd.ExitOK)
	r.wantStdout(t, good+": present (size 30 and adler32", "1 checked: 1 present, 0 missing, 0 differ, 0 unreadable")

	// a storage that fails: unreadable, 75
	srv := davtest.NewServer(t, w.dst)
	w.dest = srv.URLOf
	broken := w.done(t, "broken.root", payload, nil)
	srv.Fail("broken.root", http.StatusServiceUnavailable)
	r = w.verify(t).wantCode(t, cmd.ExitTempFail)
	r.wantStdout(t, broken+": unreadable (", "2 checked: 1 present, 0 missing, 0 differ, 1 unreadable")

	// one missing beside it: 1
	w.dest = func(name string) string { return "file://" + filepath.Join(w.dst, name) }
	missing := w.done(t, "missing.root", nil, nil)
	r = w.verify(t).wantCode(t, cmd.ExitError)
	r.wantStdout(t, missing+": missing (no such file (ENOENT))", "3 checked: 1 present, 1 missing, 0 differ, 1 unreadable")

	// only one that differs, selected by its LFN: 1
	differs := w.done(t, "short.root", payload[:4], nil)
	w.verify(t, "--lfn", "/store/user/short.root").wantCode(t, cmd.ExitError).wantStdout(t, differs+": differs (size 4, want 30)", "1 checked:")
}

// TestVerify_JSONHistoryAndRetry: --json lines; each result in the
// transfer's history, replaced by the next verification; --dry-run writes
// nothing; retry --verified missing queues again the transfer whose source
// exists and says why of the other, in its output and its history.
func TestVerify_JSONHistoryAndRetry(t *testing.T) {
	requireGfalTools(t)
	w := newDoneWorld(t)
	back := w.done(t, "back.root", nil, payload)
	lost := w.done(t, "lost.root", nil, nil)
	r := w.verify(t, "--json").wantCode(t, cmd.ExitError)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("--json: %d lines, want 2 transfers and the totals:\n%s", len(lines), r.stdout)
	}
	for _, l := range lines[:2] {
		var o struct{ ID, Result, URL string }
		if err := json.Unmarshal([]byte(l), &o); err != nil || o.Result != "missing" || (o.ID != back && o.ID != lost) || !strings.HasPrefix(o.URL, "file://") {
			t.Errorf("line %s: %+v %v, want a missing transfer", l, o, err)
		}
	}
	var tot struct{ Totals map[string]int }
	if err := json.Unmarshal([]byte(lines[2]), &tot); err != nil || tot.Totals["missing"] != 2 {
		t.Errorf("last line %s: %+v %v, want the totals", lines[2], tot, err)
	}
	verified := func(id string) (int, state.Transition) {
		n := 0
		tr := w.get(t, id)
		for _, h := range tr.History {
			if h.Verified != "" {
				n++
			}
		}
		last, _ := tr.LastVerification()
		return n, last
	}
	if n, last := verified(back); n != 1 || last.Verified != state.VerifyMissing || !strings.Contains(last.Reason, "no such file") {
		t.Fatalf("history: %d verification entries, last %+v", n, last)
	}
	// the next one replaces it; a dry run writes nothing
	w.verify(t, "--json").wantCode(t, cmd.ExitError)
	before := w.get(t, back)
	w.verify(t, "--dry-run").wantCode(t, cmd.ExitError)
	if n, _ := verified(back); n != 1 || w.get(t, back).Rev != before.Rev {
		t.Fatalf("after a second verification and a dry run: %d entries, rev %s (was %s); want one, unchanged", n, w.get(t, back).Rev, before.Rev)
	}
	aso(t, "list", w.flag, "--user", "alice", "--verified", "missing", "--in-state", "done").wantCode(t, cmd.ExitOK).wantStdout(t, back[:16], lost[:16])

	r = aso(t, "retry", w.flag, "--user", "alice", "--verified", "missing", "--progress", "never", "--log-level", "error").wantCode(t, cmd.ExitOK)
	r.wantStdout(t, back+": queued again", lost+": not queued again: the source is missing (ENOENT)", "1 queued again")
	if tr := w.get(t, back); tr.State != state.StateNew || tr.VerifiedAs() != "" {
		t.Errorf("retried: %s, verified %q; want new, the verification no longer holding", tr.State, tr.VerifiedAs())
	}
	tr := w.get(t, lost)
	if last, _ := tr.LastVerification(); tr.State != state.StateDone || !strings.Contains(last.Reason, "not queued again: the source is missing") {
		t.Errorf("not retried: %s, verification %q; want done, saying why", tr.State, last.Reason)
	}
	aso(t, "retry", w.flag, "--user", "alice", "--verified", "present").wantCode(t, cmd.ExitUsage)
}

// TestVerify_Sample: --sample checks a random share, and writes only
// what it checked; a share out of range is a usage error.
func TestVerify_Sample(t *testing.T) {
	requireGfalTools(t)
	w := newDoneWorld(t)
	var ids []string
	for i := range 20 {
		ids = append(ids, w.done(t, fmt.Sprintf("f%d.root", i), payload, nil))
	}
	r := w.verify(t, "--sample", "30%", "--parallel", "4").wantCode(t, cmd.ExitOK)
	n := strings.Count(r.stdout, ": present (")
	if n == 0 || n == 20 || !strings.Contains(r.stdout, fmt.Sprintf("%d checked: %d present", n, n)) {
		t.Fatalf("--sample 30%% of 20 checked %d:\n%s", n, r.stdout)
	}
	recorded := 0
	for _, id := range ids {
		if tr := w.get(t, id); tr.VerifiedAs() == state.VerifyPresent {
			recorded++
			if !strings.Contains(r.stdout, id+": present") {
				t.Errorf("%s recorded but not reported", id)
			}
		}
	}
	if recorded != n {
		t.Errorf("%d recorded, %d checked", recorded, n)
	}
	for _, bad := range []string{"0%", "101%", "x", "-0.1"} {
		w.verify(t, "--sample", bad).wantCode(t, cmd.ExitUsage)
	}
	w.verify(t, "--parallel", "0").wantCode(t, cmd.ExitUsage)
	w.verify(t, "--in-state", "submitted").wantCode(t, cmd.ExitUsage)
}

func requireGfalTools(t *testing.T) {
	t.Helper()
	for _, name := range []string{"gfal-stat", "gfal-sum"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s is needed for this test: apt-get install gfal2-util-scripts gfal2-plugin-file gfal2-plugin-http", name)
		}
	}
}
