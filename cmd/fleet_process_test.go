package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
)

// fleetArgs are the arguments of `aso run --all-users` in w: those of an
// agent without --user, then extra.
func fleetArgs(w *proctest.World, extra ...string) []string {
	var args []string
	all := w.AgentArgs("")
	for i := 0; i < len(all); i++ {
		if all[i] == "--user" {
			i++ // and its value
			continue
		}
		args = append(args, all[i])
	}
	return append(append(args, "--all-users"), extra...)
}

// agentsStarted returns the users for which the fleet process p logged
// "agent started", in order.
func agentsStarted(p *proctest.Proc) []string {
	var users []string
	for _, l := range p.LogLines() {
		if l["msg"] == "agent started" {
			users = append(users, fmt.Sprint(l["user"]))
		}
	}
	return users
}

// TestFleetProcess_TemplatesAndLogs runs one fleet over three users on a
// memfile store, two agents at a time: every user is drained by an agent
// of its own, the per-user metrics file template is expanded, and the
// agents' log lines reach the fleet's log carrying their user.
func TestFleetProcess_TemplatesAndLogs(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: fastSim(21), Seed: 21})
	users := []string{"ann", "ben", "cat"}
	for _, u := range users {
		w.AddMix(u, 20)
	}
	metrics := filepath.Join(w.Dir, "metrics")
	if err := os.MkdirAll(metrics, 0o755); err != nil {
		t.Fatal(err)
	}
	p := w.Start("fleet", fleetArgs(w, "--max-agents", "2", "--max-files-per-job", "5",
		"--metrics-file", filepath.Join(metrics, "aso_{user}.prom"), "--progress", "always")...)
	if code := p.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("fleet exit %d, want 0\n%s", code, p.Tail(40))
	}
	checkFleetProgress(t, p, users)
	started := agentsStarted(p)
	slices.Sort(started)
	if !slices.Equal(started, users) {
		t.Errorf("agents started for %v, want one for each of %v", started, users)
	}
	relayed := map[string]bool{}
	for _, l := range p.LogLines() {
		if l["msg"] == "run lock taken" {
			relayed[fmt.Sprint(l["user"])] = true
		}
		// the queue summary reads the whole store: not once per agent
		if msg := fmt.Sprint(l["msg"]); strings.HasPrefix(msg, "queue of ") {
			t.Errorf("an agent of the fleet printed its queue summary: %s", msg)
		}
	}
	for _, u := range users {
		if !relayed[u] {
			t.Errorf("no log line of %s's agent in the fleet's log", u)
		}
		if _, err := os.Stat(filepath.Join(metrics, "aso_"+u+".prom")); err != nil {
			t.Errorf("metrics file of %s: %v", u, err)
		}
	}
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%s in %s", r, p.Runtime().Round(time.Millisecond))
	r.Require(t)
}

// progressLineRE is a plain progress line of a fleet: whose, done, failed.
var progressLineRE = regexp.MustCompile(`^progress: (\w+): (?:\d+ agents? · )?(\d+) done, (\d+) failed, `)

// checkFleetProgress: the fleet p printed a plain progress line for each
// of users' agents, and its last line for all of them adds up the run
// summaries of the agents.
func checkFleetProgress(t *testing.T, p *proctest.Proc, users []string) {
	t.Helper()
	seen := map[string]bool{}
	var all []string
	done, failed := 0, 0
	for _, l := range p.LogLines() {
		if raw, ok := l["raw"].(string); ok {
			if m := progressLineRE.FindStringSubmatch(raw); m != nil {
				seen[m[1]] = true
				if m[1] == "all" {
					all = m
				}
			}
		}
		if l["msg"] == "run summary" {
			done += int(l["done"].(float64))
			failed += int(l["failed"].(float64))
		}
	}
	for _, u := range users {
		if !seen[u] {
			t.Errorf("no progress line of %s's agent\n%s", u, p.Tail(40))
		}
	}
	if all == nil || all[2] != fmt.Sprint(done) || all[3] != fmt.Sprint(failed) {
		t.Errorf("the last progress line of all agents: %q; their run summaries: %d done, %d failed", all, done, failed)
	}
}

// TestFleetProcess_TwoHostsOneKilled runs two fleets over 50 users on one
// CouchDB. One is killed with SIGKILL while its agents work (its agents die
// with it, as on a host failure) and started again: it takes the users of
// its dead agents over at once (they ran on this host), although their
// locks and leases live for minutes; no transfer is lost or submitted
// twice, and every user is drained.
func TestFleetProcess_TwoHostsOneKilled(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(23), Seed: 23})
	const users = 50
	for i := range users {
		w.AddMix(fmt.Sprintf("u%02d", i), 6)
	}
	// locks and leases that outlive the test: nothing waits for them
	args := fleetArgs(w, "--max-agents", "4", "--max-files-per-job", "3", "--discover-interval", "1s", "--lock-ttl", "5m", "--lease-ttl", "10m")
	a, b := w.Start("fleet-a", args...), w.Start("fleet-b", args...)
	if !a.WaitLog(`"msg":"submit_sid written; sending to FTS"`, time.Minute) {
		t.Fatalf("no agent of fleet a submitted\n%s", a.Tail(30))
	}
	a.Kill()
	a2 := w.Start("fleet-a2", args...)
	for _, p := range []*proctest.Proc{b, a2} {
		waitFleet(t, p)
	}
	// nothing is left: a last fleet finds no user to start
	last := w.Start("fleet-last", args...)
	waitFleet(t, last)
	if n := len(agentsStarted(last)); n != 0 {
		t.Errorf("a last fleet started %d agents: the killed fleet's users were not all taken over", n)
	}
	took := 0
	for _, p := range []*proctest.Proc{b, a2} {
		for _, l := range p.LogLines() {
			if l["msg"] == "run lock taken over from an agent that is no longer running" {
				took++
			}
		}
	}
	if took == 0 {
		t.Errorf("no agent took over a lock of the killed fleet's agents")
	}
	counts := map[string]int{}
	for _, p := range []*proctest.Proc{a, b, a2, last} {
		counts[p.Name] = len(agentsStarted(p))
	}
	if counts["fleet-b"] == 0 || counts["fleet-a"]+counts["fleet-a2"] == 0 {
		t.Errorf("agents started per fleet %v: want work on both hosts", counts)
	}
	r := w.Check(proctest.CheckOptions{})
	t.Logf("%s; agents started per fleet %v", r, counts)
	r.Require(t)
}

// slowSim is a simulator whose files stay active for a minute: agents are
// busy monitoring when a test signals them.
func slowSim(seed int64) ftstest.Options {
	return ftstest.Options{Seed: seed, QueueDelay: 100 * time.Millisecond, TransferTime: time.Minute}
}

// startedFleet starts a fleet over three users of a slow world and
// returns it with the process IDs of its agents, once all three have
// submitted.
func startedFleet(t *testing.T, seed uint64) (*proctest.World, *proctest.Proc, []int) {
	t.Helper()
	w := proctest.New(t, proctest.Options{Sim: slowSim(int64(seed)), Seed: seed})
	for _, u := range []string{"ann", "ben", "cat"} {
		w.Add(u, proctest.Good, 4)
	}
	p := w.Start("fleet", fleetArgs(w, "--max-agents", "3")...)
	var pids []int
	submitted := 0
	if !p.Await(30*time.Second, func(l map[string]any) bool {
		switch {
		case l["msg"] == "agent started":
			pids = append(pids, int(l["pid"].(float64)))
		case l["msg"] == "job submitted":
			submitted++
		}
		return len(pids) == 3 && submitted >= 3
	}) {
		t.Fatalf("the fleet's three agents did not all submit\n%s", p.Tail(40))
	}
	return w, p, pids
}

// alive reports whether process pid exists (a zombie counts as gone only
// once reaped; the agents' parent reaps them, or init once it is dead).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestFleetProcess_Signals: a SIGTERM to the fleet reaches every agent,
// which stops gracefully (its claims and lock released) so that the fleet
// exits 0; a second signal kills the agents' whole process groups at once,
// even agents too frozen to stop by themselves.
func TestFleetProcess_Signals(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	t.Run("graceful", func(t *testing.T) {
		w, p, pids := startedFleet(t, 31)
		for _, pid := range pids { // as ps shows them
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err == nil && (bytes.Contains(b, []byte("--all-users")) || !bytes.Contains(b, []byte("--user\x00"))) {
				t.Errorf("the agent's arguments: %q", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
			}
		}
		p.Term()
		if code := p.Wait(30 * time.Second); code != cmd.ExitOK {
			t.Fatalf("fleet exit %d after SIGTERM, want 0\n%s", code, p.Tail(40))
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("agent %d still runs after the fleet exited", pid)
			}
		}
		signalled := map[any]bool{}
		for _, l := range p.LogLines() {
			if l["signal"] == "SIGTERM" && l["user"] != nil {
				signalled[l["user"]] = true
			}
		}
		if len(signalled) != 3 {
			t.Errorf("agents that logged the SIGTERM: %v, want all three", signalled)
		}
		r := w.Check(proctest.CheckOptions{Unfinished: true})
		r.Require(t)
	})
	t.Run("second signal", func(t *testing.T) {
		_, p, pids := startedFleet(t, 32)
		// frozen agents cannot stop gracefully: the fleet waits for them
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		p.Term()
		if !p.WaitLog(`"msg":"stop signal passed on to the agents`, 30*time.Second) {
			t.Fatalf("the fleet did not pass the signal on (exit %d)\n%s", p.Code(), p.Tail(20))
		}
		select {
		case <-p.Done():
			t.Fatalf("the fleet exited (%d) without waiting for its agents\n%s", p.Code(), p.Tail(20))
		case <-time.After(500 * time.Millisecond): // let it wait: this test is about the fleet waiting
		}
		p.Term()
		if code := p.Wait(10 * time.Second); code != cmd.ExitError {
			t.Fatalf("fleet exit %d after two signals, want %d\n%s", code, cmd.ExitError, p.Tail(40))
		}
		if err := proctest.WaitExits(pids, 5*time.Second); err != nil {
			t.Errorf("an agent survived the second signal: %v", err)
		}
	})
}

// waitFleet waits for the fleet p, which must exit 0, 3 (every user held
// elsewhere) or 75 (an agent lost its lock to a stall of the machine: the
// invariants checked afterwards say whether anything went wrong).
func waitFleet(t *testing.T, p *proctest.Proc) {
	t.Helper()
	switch code := p.Wait(90 * time.Second); code {
	case cmd.ExitOK, cmd.ExitLocked:
	case cmd.ExitTempFail:
		t.Logf("%s exit %d; its errors:\n%s", p.Name, code, errorLines(p))
	default:
		t.Fatalf("%s exit %d, want 0, 3 or 75; its errors:\n%s", p.Name, code, errorLines(p))
	}
}

// errorLines returns the log lines of p at level error, and the agents'
// exits that were not 0 or 3.
func errorLines(p *proctest.Proc) string {
	var out []string
	for _, l := range p.LogLines() {
		code, hasCode := l["exit_code"].(float64)
		if l["level"] == "error" || hasCode && code != 0 && code != 3 {
			b, _ := json.Marshal(l)
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}

// TestFleetProcess_MostSevereExit: the token file template names a file
// per user, and one user's is missing. That user's agent exits 78
// (credentials: needs a person) without touching anything; the others
// drain; the fleet exits 78, the most severe code of its agents.
func TestFleetProcess_MostSevereExit(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: fastSim(41), Seed: 41})
	token, err := os.ReadFile(w.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(w.Dir, "tokens")
	if err := os.MkdirAll(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "ben", "cat"} {
		w.Add(u, proctest.Good, 5)
		if u != "cat" {
			if err := os.WriteFile(filepath.Join(tokens, u), token, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := w.Start("fleet", fleetArgs(w, "--max-agents", "3", "--token-file", filepath.Join(tokens, "{user}"))...)
	if code := p.Wait(time.Minute); code != cmd.ExitConfig {
		t.Fatalf("fleet exit %d, want %d\n%s", code, cmd.ExitConfig, p.Tail(40))
	}
	codes := map[string]float64{}
	for _, l := range p.LogLines() {
		if c, ok := l["exit_code"].(float64); ok && l["fleet"] != nil && l["user"] != nil {
			codes[fmt.Sprint(l["user"])] = c
		}
	}
	if codes["ann"] != 0 || codes["ben"] != 0 || codes["cat"] != cmd.ExitConfig {
		t.Errorf("agents' exit codes %v, want ann and ben 0, cat %d", codes, cmd.ExitConfig)
	}
	// cat's end is one line at error, with its reason: the agent's error
	var ends []map[string]any
	for _, l := range p.LogLines() {
		if l["user"] == "cat" && (l["level"] == "error" || l["exit_code"] != nil) {
			ends = append(ends, l)
		}
	}
	if len(ends) != 1 || ends[0]["level"] != "error" || !strings.Contains(fmt.Sprint(ends[0]["msg"]), "agent of cat failed (exit 78): ") ||
		!strings.Contains(fmt.Sprint(ends[0]["reason"]), filepath.Join(tokens, "cat")) {
		t.Errorf("cat's agent's end: %v, want one error line with the missing token file as its reason", ends)
	}
	r := w.Check(proctest.CheckOptions{Unfinished: true})
	if r.Done != 10 || r.Unfinished != 5 {
		t.Errorf("%s: want ann's and ben's 10 done, cat's 5 untouched", r)
	}
	r.Require(t)
}
