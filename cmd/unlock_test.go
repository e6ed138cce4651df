package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// holdLock makes holder take bob's run lock for an hour in the state file.
func holdLock(t *testing.T, path, holder string) { holdLockFor(t, path, holder, time.Hour) }

// holdLockFor makes holder take bob's run lock for ttl in the state file.
func holdLockFor(t *testing.T, path, holder string, ttl time.Duration) {
	t.Helper()
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "bob", Owner: holder}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AcquireLock(context.Background(), "bob", holder, ttl); err != nil {
		t.Fatal(err)
	}
}

type statusLocks struct {
	Locks []struct {
		User    string `json:"user"`
		Holder  string `json:"holder"`
		Host    string `json:"host"`
		PID     int    `json:"pid"`
		Held    bool   `json:"held"`
		Since   string `json:"since"`
		Expires string `json:"expires"`
		Process string `json:"process"`
		Check   string `json:"process_check"`
		LastRun *struct {
			Holder   string `json:"holder"`
			Started  string `json:"started"`
			Ended    string `json:"ended"`
			ExitCode int    `json:"exit_code"`
			Error    string `json:"error"`
			By       string `json:"by"`
			TookOver string `json:"took_over"`
		} `json:"last_run"`
	} `json:"locks"`
}

func locksOf(t testing.TB, st string) statusLocks { return userLocks(t, st, "bob") }

// userLocks reads the run lock of user with aso status --json (st: the
// --state flag).
func userLocks(t testing.TB, st, user string) statusLocks {
	t.Helper()
	return userLocksAs(t, invocation{}, st, user)
}

// userLocksAs is userLocks with the environment of iv (a World's role
// credentials on CouchDB).
func userLocksAs(t testing.TB, iv invocation, st, user string) statusLocks {
	t.Helper()
	out := iv.run(t, "status", st, "--user", user, "--json").wantCode(t, 0)
	var v statusLocks
	if err := json.Unmarshal([]byte(out.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Locks) != 1 || v.Locks[0].User != user {
		t.Fatalf("status locks of %s: %+v", user, v.Locks)
	}
	return v
}

// TestStatusLocksAndUnlock: aso status shows who holds a user's run lock
// and how the last run ended; aso unlock releases a lock whose holder is
// known dead, refuses a live one unless forced, and the next run works.
func TestStatusLocksAndUnlock(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	sites, requests, _ := localSites(t, 2)
	st, path := stateFile(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--progress", "never").wantCode(t, 0)
	l := locksOf(t, st).Locks[0]
	if l.Held || l.LastRun == nil || l.LastRun.ExitCode != 0 || l.LastRun.Started == "" || l.LastRun.Ended < l.LastRun.Started || l.Host != host || l.PID <= 0 {
		t.Fatalf("lock after a run: %+v (last run %+v)", l, l.LastRun)
	}
	aso(t, "status", st, "--user", "bob").wantCode(t, 0).wantStdout(t, "Run locks: 1")
	aso(t, "unlock", st, "bob").wantCode(t, 0).wantStdout(t, "run lock of bob is not held")
	aso(t, "unlock", st, "bob", "--json").wantCode(t, 0).wantStdout(t, `{"user":"bob","released":false,"reason":"not held"}`)

	// a holder on this host whose process is gone
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s:%d:dead", host, gone.Process.Pid)
	holdLock(t, path, dead)
	l = locksOf(t, st).Locks[0]
	if !l.Held || l.Holder != dead || l.PID != gone.Process.Pid || l.Since == "" || l.Expires == "" || l.Process != "dead" || !strings.Contains(l.Check, "is gone") {
		t.Fatalf("lock held by a dead process: %+v", l)
	}
	wantMatch(t, aso(t, "status", st, "--user", "bob").wantCode(t, 0).stdout, `(?m)^bob\s+dead\s+`+regexp.QuoteMeta(host))
	before := time.Now().UTC().Truncate(time.Microsecond)
	invocation{env: map[string]string{"USER": "dora"}}.run(t, "unlock", st, "bob").wantCode(t, 0).wantStdout(t, "released the run lock of bob", "is gone from this host")
	l = locksOf(t, st).Locks[0]
	if l.Held || l.LastRun == nil || l.LastRun.Holder != dead || l.LastRun.ExitCode != -1 {
		t.Fatalf("lock after unlock: %+v (last run %+v)", l, l.LastRun)
	}
	// who released it, and when
	by := "dora@" + host + ":cli"
	if ended, err := time.Parse(time.RFC3339Nano, l.LastRun.Ended); err != nil || l.LastRun.By != by || ended.Before(before) {
		t.Fatalf("last run after unlock: %+v (%v); want by %s, ended at or after %s", l.LastRun, err, by, before)
	}
	wantMatch(t, aso(t, "status", st, "--user", "bob").wantCode(t, 0).stdout, `unknown: lock released by aso unlock \(held by .* is gone from this host\) \(by `+by+`\)`)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never").wantCode(t, 0)

	// a run takes a dead holder's lock over at once, and says so
	holdLock(t, path, dead)
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never").wantCode(t, 0)
	wantMatch(t, r.stderr, `"holder":"`+regexp.QuoteMeta(dead)+`".*"msg":"run lock taken over from an agent that is no longer running","reason":"process \d+ is gone from this host"`)
	if l := locksOf(t, st).Locks[0]; l.Held || l.LastRun == nil || l.LastRun.ExitCode != 0 || !strings.HasPrefix(l.LastRun.TookOver, dead+" (process ") {
		t.Fatalf("lock after a run that took it over: %+v (last run %+v)", l, l.LastRun)
	}

	// a live holder: this very process, or one on another host
	for _, c := range []struct{ holder, process, run string }{
		{fmt.Sprintf("%s:%d:live", host, os.Getpid()), "running", `held by .*:live until .*: process \d+ runs on this host; that agent is working on this queue`},
		{"elsewhere.example.org:4242:x", "unknown", `held by elsewhere.example.org:4242:x until .*: it runs on host elsewhere.example.org, which cannot be checked from here; if that agent is dead, .aso unlock bob --force. releases the lock`},
	} {
		holder := c.holder
		holdLock(t, path, holder)
		wantMatch(t, aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never").wantCode(t, 3).stderr, c.run)
		r := aso(t, "unlock", st, "bob").wantCode(t, 3)
		wantMatch(t, r.stderr, `--force`)
		if l := locksOf(t, st).Locks[0]; !l.Held || l.Holder != holder || l.Process != c.process {
			t.Fatalf("a refused unlock released the lock: %+v", l)
		}
		aso(t, "unlock", st, "bob", "--force", "--json").wantCode(t, 0).wantStdout(t, `{"user":"bob","released":true,"holder":"`, `"reason":"forced: `)
		if l := locksOf(t, st).Locks[0]; l.Held || l.LastRun.Holder != holder {
			t.Fatalf("after a forced unlock: %+v", l)
		}
	}
	aso(t, "unlock", st, "bad user!").wantCode(t, cmd.ExitUsage)
}

// TestRun_LockedByAStaleHolder: a holder that runs on this host but has
// not renewed its lock for longer than a renewal period (it expires within
// a third of the run's --lock-ttl) looks dead: the refusal (exit 3) says so
// and names aso unlock; the lock is not taken over.
func TestRun_LockedByAStaleHolder(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	sites, _, _ := localSites(t, 1)
	st, path := stateFile(t)
	live := fmt.Sprintf("%s:%d:live", host, os.Getpid())
	holdLockFor(t, path, live, time.Minute)
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--lock-ttl", "5m", "--progress", "never").wantCode(t, 3)
	wantMatch(t, r.stderr, regexp.QuoteMeta(live)+` until .*: process \d+ runs on this host; it looks dead \(not renewed for a while\); if it is, .aso unlock bob --force. releases the lock`)
	if l := locksOf(t, st).Locks[0]; !l.Held || l.Holder != live {
		t.Fatalf("the stale holder's lock was taken: %+v", l)
	}
}
