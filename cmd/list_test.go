package cmd_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// jsonLines decodes JSON lines of transfers.
func transferLines(t *testing.T, out string) []state.Transfer {
	t.Helper()
	var ts []state.Transfer
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var tr state.Transfer
		if err := json.Unmarshal([]byte(line), &tr); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ts = append(ts, tr)
	}
	return ts
}

func listIDs(t *testing.T, args ...string) []string {
	t.Helper()
	r := aso(t, append(args, "--json")...).wantCode(t, 0)
	var ids []string
	for _, tr := range transferLines(t, r.stdout) {
		ids = append(ids, tr.ID)
	}
	return ids
}

func TestList_Filters(t *testing.T) {
	q := newQueue(t)
	for _, c := range []struct {
		name string
		args []string
		want int
		id   string
	}{
		{"state", []string{"--user", "alice", "list", "--in-state", "failed"}, 1, q.failed.ID},
		{"fts job", []string{"--user", "alice", "list", "--fts-job", "job-1"}, 1, q.submitted.ID},
		{"lfn glob, every user", []string{"list", "--all-users", "--lfn", "/store/user/*/ntuple.root"}, 1, ""},
		{"lfn glob of another user", []string{"--user", "alice", "list", "--lfn", "/store/user/*/ntuple.root"}, 0, ""},
		{"lfn prefix", []string{"--user", "alice", "list", "--lfn", "/store/user/alice/run1/"}, 2, ""},
		{"link", []string{"--user", "alice", "list", "--link", "T2_A->T2_B"}, 3, ""},
		{"all users", []string{"list", "--all-users"}, 7, ""},
		{"limit", []string{"list", "--all-users", "--limit", "2"}, 2, ""},
	} {
		got := listIDs(t, append([]string{q.flag}, c.args...)...)
		if len(got) != c.want || (c.id != "" && got[0] != c.id) {
			t.Errorf("%s: listed %v, want %d (%s)", c.name, got, c.want, c.id)
		}
	}
	since := strings.Join(listIDs(t, q.flag, "--user", "alice", "list", "--since", "1h"), " ")
	if !strings.Contains(since, q.retried.ID) || strings.Contains(since, q.done.ID) {
		t.Errorf("--since 1h listed %s: want the retried transfer, not the one done 2h ago", since)
	}
	r := aso(t, q.flag, "--user", "alice", "list", "--in-state", "failed").wantCode(t, 0)
	r.wantStdout(t, "ID  ", "STATE", q.failed.ID[:16]+"  alice  failed", "checksum mismatch")
	for _, args := range [][]string{
		{"list", "--in-state", "bogus"}, {"list", "--since", "banana"}, {"list", "--since", "-1h"},
		{"list", "--lfn", "/store/[a"}, {"list", "--link", "T2_A"}, {"list", "--all-users"}, {"list", "--limit", "-1"},
	} {
		r := aso(t, append([]string{q.flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitUsage)
		if !strings.Contains(r.stderr, args[1]) {
			t.Errorf("%v: stderr %q does not name the flag", args, r.stderr)
		}
	}
}

// TestList_Pages lists more transfers than one page holds: each is listed
// once, in order.
func TestList_Pages(t *testing.T) {
	flag := newState(t)
	var in strings.Builder
	const n = 2500
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, `{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "size": 1}`+"\n", i, i)
	}
	invocation{stdin: strings.NewReader(in.String())}.run(t, flag, "enqueue").wantCode(t, 0)
	r := aso(t, flag, "--user", "alice", "list", "--json").wantCode(t, 0)
	ts := transferLines(t, r.stdout)
	seen := map[string]bool{}
	for i := range ts {
		if seen[ts[i].ID] || (i > 0 && state.ListLess(&ts[i], &ts[i-1])) {
			t.Fatalf("transfer %d %s repeated or out of order", i, ts[i].ID)
		}
		seen[ts[i].ID] = true
	}
	if len(ts) != n {
		t.Fatalf("listed %d, want %d", len(ts), n)
	}
	if got := listIDs(t, flag, "--user", "alice", "list", "--limit", "1500"); len(got) != 1500 {
		t.Fatalf("--limit 1500 listed %d", len(got))
	}
}
