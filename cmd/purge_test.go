package cmd_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// TestPurge removes the ended transfers of a user, archiving them first,
// and leaves the waiting ones; bad flags are usage errors.
func TestPurge(t *testing.T) {
	sites, requests, _ := localSites(t, 5)
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--progress", "never").wantCode(t, 0)
	wantQueue(t, map[state.State]int{state.StateDone: 5, state.StateFailed: 0}, st, "--user", "bob")
	_, more, _ := localSites(t, 7) // the two last are new
	aso(t, "enqueue", st, "-f", more).wantCode(t, 0)

	aso(t, "purge", st, "--user", "bob").wantCode(t, cmd.ExitUsage)
	aso(t, "purge", st, "--user", "bob", "--older-than", "-1h").wantCode(t, cmd.ExitUsage)
	aso(t, "purge", st, "--user", "bob", "--older-than", "1h").wantCode(t, 0).wantStdout(t, "purged 0 terminal transfers of user bob")
	aso(t, "purge", st, "--user", "alice", "--older-than", "1ns").wantCode(t, 0).wantStdout(t, "purged 0 ")

	arch := filepath.Join(t.TempDir(), "archive.jsonl")
	host, _ := os.Hostname()
	before := time.Now()
	invocation{env: map[string]string{"USER": "dora"}}.run(t, "purge", st, "--user", "bob", "--older-than", "1ns", "--archive", arch).wantCode(t, 0).
		wantStdout(t, "purged 5 terminal transfers of user bob", "archived to "+arch)
	after := time.Now()
	f, err := os.Open(arch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var tr state.Transfer
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatalf("archive line %d: %v", n+1, err)
		}
		if tr.State != state.StateDone || tr.User != "bob" || len(tr.History) < 5 {
			t.Fatalf("archive line %d: %s of %s with %d history entries", n+1, tr.State, tr.User, len(tr.History))
		}
		// each archived record says who purged it and when
		last := tr.History[len(tr.History)-1]
		if last.By != "dora@"+host+":cli" || last.Reason != "purged" || last.From != state.StateDone || last.To != state.StateDone ||
			last.At.Before(before.Add(-time.Millisecond)) || last.At.After(after) || !tr.LastUpdate.Before(before) {
			t.Errorf("archive line %d: last history entry %+v, last update %s; want purged by dora@%s between %s and %s", n+1, last, tr.LastUpdate, host, before, after)
		}
		n++
	}
	if n != 5 {
		t.Errorf("archive has %d lines, want 5", n)
	}
	out := aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0)
	var sum struct {
		Total   int            `json:"total"`
		ByState map[string]int `json:"by_state"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Total != 2 || sum.ByState["new"] != 2 {
		t.Errorf("after purge: %+v, want the 2 new transfers only", sum)
	}
	aso(t, "purge", st, "--all-users", "--older-than", "1ns").wantCode(t, 0).wantStdout(t, "purged 0 terminal transfers of every user")
	aso(t, "purge", st, "--all-users", "--older-than", "1ns", "--json").wantCode(t, 0).wantStdout(t, `{"user":"","purged":0,"before":"`)
}
