package cmd_test

import (
	"os"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
)

// EnvLarge enables the full-size concurrency test (5,000 transfers instead
// of 1,000): make concurrency-large, or ASO_TEST_LARGE=1 go test -run
// TestRun_Concurrency ./cmd/
const EnvLarge = "ASO_TEST_LARGE"

// TestRun_Concurrency runs four agents for four users, plus two agents
// racing for a fifth user, at once against one CouchDB database and one
// FTS simulator, and proves from outside that they drain every transfer
// with none claimed twice or by another user's agent, no update lost and no
// FTS submission duplicated, and that one of the racing pair exits 3
// without touching anything.
func TestRun_Concurrency(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	total := 1000
	if os.Getenv(EnvLarge) == "1" {
		total = 5000
	}
	users := []string{"u1", "u2", "u3", "u4", "u5"}
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(31), Seed: 31, Lifetime: 10 * time.Minute})
	for _, u := range users {
		w.AddMix(u, total/len(users))
	}
	args := []string{"--max-files-per-job", "50", "--lock-ttl", "1m", "--phase-timeout", "1m"}
	start := time.Now()
	procs := map[string][]*proctest.Proc{}
	for _, u := range users {
		procs[u] = append(procs[u], w.StartAgent(u, args...))
	}
	procs["u5"] = append(procs["u5"], w.StartAgent("u5", args...))

	var loser *proctest.Proc
	for _, u := range users {
		working := 0
		for _, p := range procs[u] {
			switch code := p.Wait(8 * time.Minute); code {
			case cmd.ExitOK:
				working++
			case cmd.ExitLocked:
				if u != "u5" {
					t.Errorf("%s (alone for %s) exited %d", p.Name, u, code)
				}
				loser = p
			default:
				t.Errorf("%s exited %d\n%s", p.Name, code, p.Tail(40))
			}
		}
		if working != 1 {
			t.Errorf("%d agents of %s ended their work, want exactly 1", working, u)
		}
	}
	elapsed := time.Since(start)
	if loser == nil {
		t.Fatalf("neither agent of u5 exited %d", cmd.ExitLocked)
	}
	if d := loser.Runtime(); d > 15*time.Second {
		t.Errorf("the locked-out agent of u5 took %s to exit", d)
	}
	if ids := w.TouchedBy(loser.Pid()); len(ids) > 0 {
		t.Errorf("the locked-out agent of u5 touched %d transfers, e.g. %s", len(ids), ids[0])
	}
	checkOwners(t, w, procs)

	r := w.Check(proctest.CheckOptions{})
	t.Logf("%d users, %d agents, %d transfers drained in %s (%.0f transfers/s): %s",
		len(users), len(users)+1, r.Transfers, elapsed.Round(time.Millisecond), float64(r.Transfers)/elapsed.Seconds(), r)
	for _, u := range users {
		for _, p := range procs[u] {
			t.Logf("  %s: exit %d after %s", p.Name, p.Code(), p.Runtime().Round(time.Millisecond))
		}
	}
	r.Require(t)
	if r.Transfers != total || r.Done == 0 {
		t.Errorf("want %d transfers, most done: %s", total, r)
	}
}

// checkOwners proves that every transfer was claimed and changed only by the
// one agent that worked for its user.
func checkOwners(t *testing.T, w *proctest.World, procs map[string][]*proctest.Proc) {
	t.Helper()
	userOf := map[string]string{}
	for _, e := range w.Expected() {
		userOf[e.ID()] = e.Request.User
	}
	seen := map[string]string{}
	for u, ps := range procs {
		for _, p := range ps {
			for _, id := range w.TouchedBy(p.Pid()) {
				if userOf[id] != u {
					t.Errorf("%s (agent of %s) touched %s of %s", p.Name, u, id, userOf[id])
				}
				if other, ok := seen[id]; ok {
					t.Errorf("%s was touched by %s and %s", id, other, p.Name)
				}
				seen[id] = p.Name
			}
		}
	}
	if got, want := len(seen), len(userOf); got != want {
		t.Errorf("%d transfers were touched by an agent, want all %d", got, want)
	}
}
