package cmd_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// withDependencies rewrites the requests file of localSites: request i
// depends on the IDs deps[i] gives. It returns the IDs of the requests.
func withDependencies(t *testing.T, requests string, deps func(i int, ids []string) []string) []string {
	t.Helper()
	b, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	reqs := make([]state.Request, len(lines))
	ids := make([]string, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &reqs[i]); err != nil {
			t.Fatal(err)
		}
		ids[i] = reqs[i].ID()
	}
	for i := range reqs {
		reqs[i].DependsOn = deps(i, ids)
		nb, err := json.Marshal(reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(nb)
	}
	if err := os.WriteFile(requests, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestRun_Dependencies: a dry run does not count transfers waiting for
// their dependencies; `aso status ID` shows each dependency's state; a
// transfer whose dependency stays unknown past --dependency-wait fails
// naming it, while the others are done in order.
func TestRun_Dependencies(t *testing.T) {
	sites, requests, _ := localSites(t, 3)
	unknown := strings.Repeat("ab", 32)
	ids := withDependencies(t, requests, func(i int, ids []string) []string {
		switch i {
		case 1:
			return []string{ids[0]}
		case 2:
			return []string{unknown}
		}
		return nil
	})
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--dry-run").wantCode(t, 0).
		wantStdout(t, "dry run: 1 transfers eligible, 1 FTS jobs would be submitted", "2 more waiting for their dependencies (not counted)")

	out := aso(t, "status", st, ids[1]).wantCode(t, 0)
	wantMatch(t, out.stdout, `Dependencies: 1`, ids[0]+`\s+new\s+-`)
	out = aso(t, "status", st, ids[2], "--json").wantCode(t, 0)
	var v struct {
		ID           string `json:"_id"`
		Dependencies []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != ids[2] || len(v.Dependencies) != 1 || v.Dependencies[0].ID != unknown || v.Dependencies[0].State != "" {
		t.Errorf("status --json of a transfer with an unknown dependency: %+v", v)
	}

	aso(t, "run", st, "--user", "bob", "--sites", sites, "--dependency-wait", "0s").wantCode(t, cmd.ExitUsage)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--progress", "never", "--dependency-wait", "1ms").
		wantCode(t, 0)
	wantQueue(t, map[state.State]int{state.StateDone: 2, state.StateFailed: 1}, st, "--user", "bob")
	out = aso(t, "status", st, ids[2]).wantCode(t, 0)
	wantMatch(t, out.stdout, `State:\s+failed`, `Reason:\s+dependency `+unknown+` unknown .* after the transfer was created`)
	out = aso(t, "status", st, ids[1]).wantCode(t, 0)
	wantMatch(t, out.stdout, `State:\s+done`, ids[0]+`\s+done`)
}
