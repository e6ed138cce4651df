package cmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestStatus_ErrorClasses: failed transfers are counted by error class in
// the text and JSON summaries, and one transfer shows its class and the
// FTS endpoint of its job.
func TestStatus_ErrorClasses(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	agent := newPastAgent(t, path, "alice", 0)
	ctx := context.Background()
	var failed []state.Transfer
	for i, class := range []string{"source_missing", "source_missing", ""} {
		tr := agent.claim()
		res, err := agent.st.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: []state.Transfer{tr}, SID: "sid", Endpoint: "https://fts-a.example.org:8446"}})
		if err != nil || res[0][0].Err != nil {
			t.Fatalf("prepare %d: %v %v", i, err, res)
		}
		tr, _ = agent.st.Get(ctx, tr.ID)
		cres, err := statetest.Commit(ctx, agent.st, []state.Commit{{Transfer: tr, FileID: int64(i + 1)}}, "job-x")
		if err != nil || cres[0].Err != nil {
			t.Fatalf("commit %d: %v %v", i, err, cres)
		}
		tr, _ = agent.st.Get(ctx, tr.ID)
		tres, err := agent.st.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: state.OutcomeFailed,
			Reason: "SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", ErrorClass: class, FTSJob: "job-x"}})
		if err != nil || tres[0].Err != nil {
			t.Fatalf("terminal %d: %v %v", i, err, tres)
		}
		failed = append(failed, tr)
	}

	out := aso(t, flag, "--user", "alice", "status").wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^FAILED BY ERROR CLASS\s+COUNT$`, `(?m)^source_missing\s+2$`, `(?m)^unknown\s+1$`,
		`(?m)^2\s+failed\s+source_missing\s+SOURCE \[2\] Result HTTP 404`)
	if strings.Contains(out, "timeout ") {
		t.Errorf("a class without failures is listed:\n%s", out)
	}

	r := aso(t, flag, "--user", "alice", "status", "--json").wantCode(t, 0)
	var got struct {
		ByErrorClass map[string]int `json:"by_error_class"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(got.ByErrorClass) != len(state.ErrorClasses) || got.ByErrorClass["source_missing"] != 2 ||
		got.ByErrorClass["unknown"] != 1 || got.ByErrorClass["timeout"] != 0 {
		t.Errorf("by_error_class %v, want every class, source_missing 2, unknown 1", got.ByErrorClass)
	}

	out = aso(t, flag, "status", failed[0].ID).wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^Error class:\s+source_missing$`, `(?m)^FTS endpoint:\s+https://fts-a.example.org:8446$`)

	// aso list selects by class: "unknown" is the failure without one
	lines := func(r result) []string { return strings.Split(strings.TrimSpace(r.stdout), "\n") }
	r = aso(t, flag, "--user", "alice", "list", "--error-class", "source_missing", "--json").wantCode(t, 0)
	if n := len(lines(r)); n != 2 || !strings.Contains(r.stdout, failed[0].ID) || !strings.Contains(r.stdout, failed[1].ID) {
		t.Errorf("list --error-class source_missing: %d lines, want the first two failures:\n%s", n, r.stdout)
	}
	r = aso(t, flag, "--user", "alice", "list", "--error-class", "unknown", "--json").wantCode(t, 0)
	if n := len(lines(r)); n != 1 || !strings.Contains(r.stdout, failed[2].ID) {
		t.Errorf("list --error-class unknown: %d lines, want the third failure:\n%s", n, r.stdout)
	}
	r = aso(t, flag, "--user", "alice", "list", "--error-class", "file_missing").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "source_missing") {
		t.Errorf("a class that does not exist: stderr %q, want the list of classes", r.stderr)
	}
}
