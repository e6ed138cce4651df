package cmd_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// dryLine is one line of a dry run's --json output.
type dryLine struct {
	ID      string `json:"id"`
	User    string `json:"user"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	DryRun  bool   `json:"dry_run"`
}

func dryLines(t *testing.T, out string) []dryLine {
	t.Helper()
	var ls []dryLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var d dryLine
		if err := json.Unmarshal([]byte(l), &d); err != nil || !d.DryRun {
			t.Fatalf("dry run --json line %q: %v", l, err)
		}
		ls = append(ls, d)
	}
	return ls
}

// TestDryRun_FileStoreUnchanged: kill, retry and purge with --dry-run
// print what they would change (counts by user and state; with --json,
// each transfer) and leave the store byte for byte as it was, writing no
// archive.
func TestDryRun_FileStoreUnchanged(t *testing.T) {
	q := newQueue(t)
	before, err := os.ReadFile(q.path)
	if err != nil {
		t.Fatal(err)
	}
	// alice: new (retried), acquired, submitted, done, failed, killed; bob: new
	r := aso(t, q.flag, "--user", "alice", "kill", "--all", "--dry-run").wantCode(t, 0)
	wantMatch(t, r.stdout, `(?m)^alice\s+new\s+1$`, `(?m)^alice\s+acquired\s+1$`, `(?m)^alice\s+submitted\s+1$`,
		`(?m)^dry run: kill would change 3 transfers of 1 user \(.*\); 0 already terminal, 0 not found; nothing was changed$`)
	r = aso(t, q.flag, "kill", "--all-users", "--in-state", "new", "--dry-run", "--json").wantCode(t, 0)
	got := dryLines(t, r.stdout)
	if len(got) != 2 || got[0].Outcome != "would_kill" || got[1].Outcome != "would_kill" || got[0].User == got[1].User {
		t.Fatalf("kill --dry-run --json of every user's new transfers: %+v", got)
	}
	r = aso(t, q.flag, "kill", q.done.ID, q.submitted.ID, unknownID, "--dry-run", "--json").wantCode(t, 1)
	got = dryLines(t, r.stdout)
	want := []dryLine{{q.done.ID, "alice", "done", "already_terminal", true}, {q.submitted.ID, "alice", "submitted", "would_request_kill", true}, {unknownID, "", "", "not_found", true}}
	if !slices.Equal(got, want) {
		t.Fatalf("kill --dry-run --json of IDs:\n%+v, want\n%+v", got, want)
	}

	aso(t, q.flag, "--user", "alice", "retry", "--failed", "--dry-run").wantCode(t, 0).
		wantStdout(t, "dry run: retry would change 1 transfer of 1 user (queued again as new, attempts reset); 0 not terminal, 0 not found")
	wantMatch(t, aso(t, q.flag, "--user", "alice", "retry", "--in-state", "done,killed,failed", "--dry-run").wantCode(t, 0).stdout,
		`(?m)^alice\s+done\s+1$`, `(?m)^alice\s+failed\s+1$`, `(?m)^alice\s+killed\s+1$`)

	arch := filepath.Join(t.TempDir(), "archive.jsonl")
	r = aso(t, q.flag, "purge", "--all-users", "--older-than", "1ns", "--archive", arch, "--dry-run").wantCode(t, 0)
	wantMatch(t, r.stdout, `(?m)^alice\s+done\s+1$`, `dry run: purge would change 3 transfers of 1 user \(removed: .*archived first to `)
	r = aso(t, q.flag, "purge", "--user", "alice", "--older-than", "1ns", "--dry-run", "--json").wantCode(t, 0)
	if got := dryLines(t, r.stdout); len(got) != 3 || got[0].Outcome != "would_purge" {
		t.Fatalf("purge --dry-run --json: %+v", got)
	}

	// the environment gives it as it gives every flag
	invocation{env: map[string]string{"ASO_DRY_RUN": "true"}}.run(t, q.flag, "--user", "alice", "kill", "--all").wantCode(t, 0).
		wantStdout(t, "dry run: kill would change 3 transfers of 1 user")

	if after, _ := os.ReadFile(q.path); !bytes.Equal(after, before) {
		t.Fatal("a dry run changed the state file")
	}
	if _, err := os.Stat(arch); !os.IsNotExist(err) {
		t.Fatalf("a dry run wrote the archive: %v", err)
	}
}

// TestDryRun_CouchDBUnchanged: on CouchDB a dry run of kill, retry and
// purge leaves every document at its revision.
func TestDryRun_CouchDBUnchanged(t *testing.T) {
	db := couchtest.DB(t)
	st := "--state=" + db
	aso(t, st, "init").wantCode(t, 0)
	aso(t, st, "enqueue", "-f", requestsDir+"good.jsonl").wantCode(t, 0)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, st, "enqueue").wantCode(t, 0)
	aso(t, st, "--user", "alice", "kill", "--all", "--lfn", "/d").wantCode(t, 0)
	before := revisions(t, db)

	wantMatch(t, aso(t, st, "--user", "alice", "kill", "--all", "--dry-run").wantCode(t, 0).stdout,
		`(?m)^alice\s+new\s+5$`, `kill would change 5 transfers of 1 user`)
	aso(t, st, "retry", "--all-users", "--in-state", "killed", "--dry-run", "--json").wantCode(t, 0)
	aso(t, st, "purge", "--all-users", "--older-than", "1ns", "--dry-run").wantCode(t, 0).
		wantStdout(t, "purge would change 1 transfer of 1 user")

	if after := revisions(t, db); !slices.Equal(after, before) {
		t.Fatalf("a dry run changed revisions:\nbefore %v\nafter  %v", before, after)
	}
}

// revisions returns every document of the database at u with its
// revision, in ID order.
func revisions(t *testing.T, u string) []string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(u, "/") + "/_all_docs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all struct {
		Rows []struct {
			ID    string `json:"id"`
			Value struct {
				Rev string `json:"rev"`
			} `json:"value"`
		} `json:"rows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("_all_docs: HTTP %d, %v", resp.StatusCode, err)
	}
	var out []string
	for _, r := range all.Rows {
		out = append(out, r.ID+"@"+r.Value.Rev)
	}
	if len(out) < 7 {
		t.Fatalf("_all_docs: %v, want the 7 transfers and the design documents", out)
	}
	return out
}
