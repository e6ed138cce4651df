package cmd_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

func TestKill_ExitCodes(t *testing.T) {
	q := newQueue(t)
	r := invocation{env: map[string]string{"USER": "dora"}}.run(t, q.flag, "kill", q.done.ID, q.submitted.ID).wantCode(t, 0)
	r.wantStdout(t,
		q.done.ID+": already terminal (done)\n",
		q.submitted.ID+": kill requested (submitted; the agent cancels it)\n",
		"0 killed, 1 kill requested, 1 already terminal, 0 not found, 0 failed\n",
	)
	// the request is in the transfer's history: who asked, and when
	wantMatch(t, aso(t, q.flag, "status", q.submitted.ID).wantCode(t, 0).stdout,
		`(?m)^History: \d+$`, `(?m)^20\d\d-\S+\s+submitted\s+submitted\s+dora@\S+:cli\s+kill requested$`)

	r = aso(t, q.flag, "kill", unknownID, q.retried.ID).wantCode(t, 1)
	if !strings.Contains(r.stdout, unknownID+": not found\n") || !strings.Contains(r.stdout, q.retried.ID+": killed\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "aso: 1 transfer(s) not found") {
		t.Errorf("stderr %q", r.stderr)
	}
	if got := statusOf(t, q.flag, "--user", "alice"); count(t, got, state.StateKilled) != 2 {
		t.Errorf("killed %d, want 2: the known ID is killed despite the unknownID one", count(t, got, state.StateKilled))
	}

	for _, args := range [][]string{{"kill"}, {"--user", "alice", "kill", "--all", q.done.ID}} {
		r = aso(t, append([]string{q.flag}, args...)...).wantCode(t, cmd.ExitUsage)
		if !strings.Contains(r.stderr, "--all") {
			t.Errorf("%v: stderr %q, want --all named", args, r.stderr)
		}
	}
}

func TestKill_AllOfOneUser(t *testing.T) {
	q := newQueue(t)
	r := aso(t, q.flag, "--user", "bob", "kill", "--all").wantCode(t, 0)
	if !strings.HasSuffix(r.stdout, "1 killed, 0 kill requested, 0 already terminal, 0 not found, 0 failed\n") {
		t.Errorf("kill --all bob:\n%s", r.stdout)
	}
	if got := statusOf(t, q.flag, "--user", "bob"); count(t, got, state.StateKilled) != 1 {
		t.Errorf("bob: killed %d, want 1", count(t, got, state.StateKilled))
	}
	r = aso(t, q.flag, "--user", "alice", "kill", "--all").wantCode(t, 0)
	// alice: the new (retried) one is killed at once; the acquired and
	// submitted ones are flagged for the agent.
	if !strings.HasSuffix(r.stdout, "1 killed, 2 kill requested, 0 already terminal, 0 not found, 0 failed\n") {
		t.Errorf("kill --all alice:\n%s", r.stdout)
	}
	alice := statusOf(t, q.flag, "--user", "alice")
	wantCounts(t, alice, map[state.State]int{state.StateNew: 0, state.StateKilled: 2, state.StateAcquired: 1, state.StateSubmitted: 1, state.StateDone: 1, state.StateFailed: 1})
}

func TestRetry_ExitCodesAndFailed(t *testing.T) {
	q := newQueue(t)
	r := aso(t, q.flag, "retry", q.submitted.ID, q.killed.ID).wantCode(t, 0)
	r.wantStdout(t,
		q.submitted.ID+": not terminal, nothing to retry\n",
		q.killed.ID+": queued again\n",
		"1 queued again, 1 not terminal, 0 not found, 0 failed\n",
	)
	r = aso(t, q.flag, "retry", unknownID).wantCode(t, 1)
	if !strings.Contains(r.stdout, unknownID+": not found\n") || !strings.Contains(r.stderr, "not found") {
		t.Errorf("retry unknownID: %q %q", r.stdout, r.stderr)
	}
	aso(t, q.flag, "retry").wantCode(t, cmd.ExitUsage)

	r = aso(t, q.flag, "--user", "alice", "retry", "--failed").wantCode(t, 0)
	if r.stdout != q.failed.ID+": queued again\n1 queued again, 0 not terminal, 0 not found, 0 failed\n" {
		t.Errorf("retry --failed:\n%s", r.stdout)
	}
	alice := statusOf(t, q.flag, "--user", "alice")
	wantCounts(t, alice, map[state.State]int{state.StateNew: 3, state.StateFailed: 0, state.StateDone: 1, state.StateKilled: 0})
	r = aso(t, q.flag, "--user", "alice", "retry", "--failed").wantCode(t, 0)
	if r.stdout != "0 queued again, 0 not terminal, 0 not found, 0 failed\n" {
		t.Errorf("retry --failed with none failed:\n%s", r.stdout)
	}
}
