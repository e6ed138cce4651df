package cmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

func getTransfer(t *testing.T, flag, id string) state.Transfer {
	t.Helper()
	r := aso(t, flag, "status", "--json", id).wantCode(t, 0)
	var tr state.Transfer
	if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestKill_HonoursUser: kill --user bob of alice's transfer kills nothing
// and says whose it is; the kill of its owner is recorded with who asked.
func TestKill_HonoursUser(t *testing.T) {
	q := newQueue(t)
	id := q.retried.ID // alice's, new
	r := aso(t, q.flag, "--user", "bob", "kill", id).wantCode(t, 1)
	r.wantStdout(t, id+": not found (it belongs to alice, not bob: give --user alice or --all-users)")
	r = aso(t, q.flag, "--user", "bob", "kill", id[:8]).wantCode(t, 1)
	r.wantStdout(t, id+": not found (it belongs to alice, not bob: give --user alice or --all-users)")
	if got := getTransfer(t, q.flag, id); got.State != state.StateNew || got.KillRequested {
		t.Fatalf("bob's kill changed alice's transfer: %+v", got)
	}
	// status says whose it is alike, and shows it with --all-users
	for _, arg := range []string{id, id[:8]} {
		r = aso(t, q.flag, "--user", "bob", "status", arg).wantCode(t, 1)
		if want := "transfer " + id + ": it belongs to alice, not bob: give --user alice or --all-users"; !strings.Contains(r.stderr, want) {
			t.Errorf("status --user bob %s: stderr %q, want %q", arg, r.stderr, want)
		}
	}
	aso(t, q.flag, "status", "--all-users", id[:8]).wantCode(t, 0).wantStdout(t, "User:", "alice")
	aso(t, q.flag, "--user", "bob", "status", "--all-users", id).wantCode(t, cmd.ExitUsage)
	aso(t, q.flag, "--user", "bob", "retry", q.failed.ID).wantCode(t, 1)
	if got := getTransfer(t, q.flag, q.failed.ID); got.State != state.StateFailed {
		t.Fatalf("bob's retry changed alice's transfer: %s", got.State)
	}

	host, _ := os.Hostname()
	invocation{env: map[string]string{"USER": "carol"}}.run(t, q.flag, "--user", "alice", "kill", id).wantCode(t, 0)
	got := getTransfer(t, q.flag, id)
	last := got.History[len(got.History)-1]
	if got.State != state.StateKilled || last.By != "carol@"+host+":cli" {
		t.Fatalf("killed by %q (state %s), want carol@%s:cli", last.By, got.State, host)
	}
}

// TestIDPrefix: an ID may be given by a unique prefix of 8 digits or more
// to status, kill and retry; an ambiguous one lists its matches.
func TestIDPrefix(t *testing.T) {
	q := newQueue(t)
	r := aso(t, q.flag, "kill", q.retried.ID[:10]).wantCode(t, 0)
	r.wantStdout(t, q.retried.ID+": killed\n")
	aso(t, q.flag, "retry", strings.ToUpper(q.retried.ID[:12])).wantCode(t, 0).wantStdout(t, q.retried.ID+": queued again\n")
	aso(t, q.flag, "status", q.done.ID[:8]).wantCode(t, 0).wantStdout(t, q.done.ID)
	aso(t, q.flag, "kill", q.done.ID[:7]).wantCode(t, cmd.ExitUsage)

	// two requests whose IDs share their first 8 digits
	a, b := collidingRequests(t)
	invocation{stdin: strings.NewReader(a + "\n" + b + "\n")}.run(t, q.flag, "enqueue").wantCode(t, 0)
	ids := listIDs(t, q.flag, "--user", "zed", "list")
	r = aso(t, q.flag, "kill", ids[0][:8]).wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, ids[0]) || !strings.Contains(r.stderr, ids[1]) {
		t.Fatalf("ambiguous prefix: stderr %q", r.stderr)
	}
	aso(t, q.flag, "kill", ids[0][:16]).wantCode(t, 0)
}

// collidingRequests returns two requests of user zed whose IDs share
// their first 8 hexadecimal digits (found by trying LFNs: about 2^16).
func collidingRequests(t *testing.T) (string, string) {
	seen := map[string]int{}
	for i := 0; i < 1<<22; i++ {
		lfn := fmt.Sprintf("/c/%d", i)
		p := state.TransferID("zed", "A", lfn, "B", lfn)[:8]
		if j, ok := seen[p]; ok {
			req := func(n int) string {
				return fmt.Sprintf(`{"user": "zed", "source": "A", "destination": "B", "source_lfn": "/c/%d", "destination_lfn": "/c/%d", "size": 1}`, n, n)
			}
			return req(j), req(i)
		}
		seen[p] = i
	}
	t.Fatal("no colliding prefix found")
	return "", ""
}

// TestKillRetry_Filters acts on what the filters select, printing JSON lines.
func TestKillRetry_Filters(t *testing.T) {
	q := newQueue(t)
	onLink := listIDs(t, q.flag, "--user", "alice", "list", "--link", "T2_A->T2_B", "--in-state", "new")
	if len(onLink) == 0 {
		t.Fatal("no new transfer on the link to kill")
	}
	r := aso(t, q.flag, "--user", "alice", "kill", "--link", "T2_A->T2_B", "--in-state", "new", "--json").wantCode(t, 0)
	var outs []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var o map[string]string
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		outs = append(outs, o)
	}
	if len(outs) != len(onLink) {
		t.Fatalf("kill --link: %d outcomes, want %d:\n%s", len(outs), len(onLink), r.stdout)
	}
	for i, o := range outs {
		if o["outcome"] != "killed" || o["state"] != "killed" || o["id"] != onLink[i] {
			t.Fatalf("outcome %v", o)
		}
	}
	if got := listIDs(t, q.flag, "--user", "alice", "list", "--in-state", "new", "--link", "T2_A->T2_B"); len(got) != 0 {
		t.Fatalf("killed on the link: %d", len(got))
	}
	// retry picks failed ones by default, of the user only
	r = aso(t, q.flag, "--user", "alice", "retry", "--lfn", q.failed.DestinationLFN).wantCode(t, 0)
	r.wantStdout(t, q.failed.ID+": queued again\n", "1 queued again")
	r = aso(t, q.flag, "--user", "bob", "retry", "--in-state", "killed").wantCode(t, 0)
	r.wantStdout(t, "0 queued again")
	aso(t, q.flag, "kill", "--link", "A->B", q.done.ID).wantCode(t, cmd.ExitUsage)
}
