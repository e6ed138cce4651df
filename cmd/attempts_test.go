package cmd_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttempts_DoneTransfers: a transfer done at its first submission
// shows one attempt and no failed one, in list and status (whose JSON
// adds the submissions to the stored document).
func TestAttempts_DoneTransfers(t *testing.T) {
	sites, requests, _ := localSites(t, 3)
	flag := newState(t)
	aso(t, flag, "enqueue", "-f", requests).wantCode(t, 0)
	aso(t, flag, "--user", "bob", "run", "--sites", sites, "--interval", "20ms", "--progress", "never").wantCode(t, 0)
	out := aso(t, flag, "--user", "bob", "list", "--in-state", "done").wantCode(t, 0).stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "ATTEMPTS  FAILED") {
		t.Fatalf("list of 3 done transfers:\n%s", out)
	}
	for _, l := range lines[1:] {
		wantMatch(t, l, `^[0-9a-f]{16}\s+bob\s+done\s+1\s+0\s`)
	}
	id := listIDs(t, flag, "--user", "bob", "list")[0]
	r := aso(t, flag, "status", "--json", id).wantCode(t, 0)
	var doc struct {
		Attempts    int  `json:"attempts"`
		Submissions *int `json:"submissions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Submissions == nil || *doc.Submissions != 1 || doc.Attempts != 0 {
		t.Fatalf("status --json of a done transfer: %v\n%s", err, r.stdout)
	}
	wantMatch(t, aso(t, flag, "status", id).wantCode(t, 0).stdout, `(?m)^Attempts:\s+1$`, `(?m)^Failed attempts:\s+0$`)
}
