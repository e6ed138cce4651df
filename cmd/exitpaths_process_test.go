package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// exitRun is one `aso run` of an exit path test, with its own report and
// metrics file.
type exitRun struct {
	p               *proctest.Proc
	user            string
	report, metrics string
}

// startRun starts `aso run` for user in w with extra arguments (after
// the World's agent arguments), a report and a metrics file.
func startRun(t *testing.T, w *proctest.World, name, user string, extra ...string) *exitRun {
	t.Helper()
	dir := filepath.Join(w.Dir, "exit-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &exitRun{user: user, report: filepath.Join(dir, "report.json"), metrics: filepath.Join(dir, "aso.prom")}
	args := append(w.AgentArgs(user, extra...), "--report", r.report, "--metrics-file", r.metrics)
	r.p = w.Start("run-"+name, args...)
	return r
}

// wantExit checks that the process exited with want and that its report,
// its metrics file and (recorded: the run held the lock) the lock's last
// run in aso status --json all say want; a run that did not hold the lock
// must have recorded nothing. Its output must contain each of says.
func (r *exitRun) wantExit(t *testing.T, w *proctest.World, want int, recorded bool, says ...string) {
	t.Helper()
	if code := r.p.Wait(2 * time.Minute); code != want {
		t.Fatalf("%s exited %d, want %d\n%s", r.p.Name, code, want, r.p.Tail(30))
	}
	t.Logf("%s: exit %d after %s", r.p.Name, want, r.p.Runtime().Round(time.Millisecond))
	for _, s := range says {
		if !r.p.WaitLog(s, 0) {
			t.Errorf("%s does not say %q:\n%s", r.p.Name, s, r.p.Tail(20))
		}
	}
	var rep struct {
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
		User     string `json:"user"`
	}
	b, err := os.ReadFile(r.report)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil || rep.ExitCode != want || rep.User != r.user {
		t.Errorf("%s: report %+v (%v), want %s's with exit code %d", r.p.Name, rep, err, r.user, want)
	}
	if got, ok := metricsExitCode(t, r.metrics, r.user); !ok || got != want {
		t.Errorf("%s: metrics file says aso_run_exit_code %d (found %v), want %d", r.p.Name, got, ok, want)
	}
	owner := ""
	for _, l := range r.p.LogLines() {
		if l["msg"] == "run lock taken" {
			owner = fmt.Sprint(l["owner"])
		}
	}
	run := lastRunOf(t, w, r.user)
	switch {
	case recorded && (owner == "" || run == nil || run.Holder != owner || run.ExitCode != want):
		t.Errorf("%s: the lock's last run is %+v, want one of %q with exit code %d", r.p.Name, run, owner, want)
	case !recorded && run != nil && owner != "" && run.Holder == owner:
		t.Errorf("%s: a run that did not end holding the lock recorded %+v", r.p.Name, run)
	}
}

// metricsExitCode reads aso_run_exit_code of user from a metrics file.
func metricsExitCode(t testing.TB, path, user string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	m := regexp.MustCompile(`(?m)^aso_run_exit_code\{user="` + regexp.QuoteMeta(user) + `"\} (-?\d+)$`).FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	return n, err == nil
}

// runRecord is a lock's last run, as aso status --json shows it.
type runRecord struct {
	Holder   string `json:"holder"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
	TookOver string `json:"took_over"`
}

// lastRunOf is the last run recorded in user's run lock (nil: none),
// read with aso status --json.
func lastRunOf(t testing.TB, w *proctest.World, user string) *runRecord {
	t.Helper()
	out := invocation{env: w.Env}.run(t, "status", "--state="+w.StateURL, "--user", user, "--json").wantCode(t, 0)
	var v struct {
		Locks []struct {
			LastRun *runRecord `json:"last_run"`
		} `json:"locks"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Locks) == 0 {
		return nil
	}
	return v.Locks[0].LastRun
}

// exitSim is the simulator of the exit path tests: files of the user
// "slow" stay active for a minute, the others' end within half a second.
func exitSim(seed int64) ftstest.Options {
	return ftstest.Options{
		Seed: seed, QueueDelay: 100 * time.Millisecond, TransferTime: 200 * time.Millisecond,
		TransferTimeOf: func(src, _ string) time.Duration {
			if strings.Contains(src, "/user/slow/") {
				return time.Minute
			}
			return 0
		},
	}
}

// TestRunProcess_ExitCodesAgree drives `aso run` down every path it can
// end by: 0, 1, 2, 3, 75 (a store that cannot be reached, a run that gives
// up), 78 (a missing sites file, a missing store), a SIGTERM during setup
// (with and without the run lock), a SIGTERM mid-run and a second signal.
// For each, the process's exit code is the one in its report, in its
// metrics file and, when it held the lock, in the lock's last run: a run
// stopped by a signal during setup exits 0 and records 0 when it held the
// lock, nothing when it did not.
func TestRunProcess_ExitCodesAgree(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: exitSim(61), Seed: 61})
		front := newFTSFront(t, w.Sim.URL)
		via := []string{"--fts", front.URL, "--lock-ttl", "1m", "--lease-ttl", "2m"}

		w.Add("okay", proctest.Good, 3)
		startRun(t, w, "ok", "okay", via...).wantExit(t, w, cmd.ExitOK, true)

		front.set("whoami", func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprint(rw, `{"user_dn":"/DC=org/CN=nobody","vos":[],"method":"oauth2"}`) // no VO: aso cannot submit
		})
		w.Add("err", proctest.Good, 1) // a user without transfers ends before the FTS check
		startRun(t, w, "error", "err", via...).wantExit(t, w, cmd.ExitError, true, "the server gives no VO")
		front.set("whoami", nil)

		startRun(t, w, "usage-flag", "usage", append(via, "--cool-off", "0")...).wantExit(t, w, cmd.ExitUsage, false)
		startRun(t, w, "usage-value", "usage", append(via, "--dependency-wait", "0s")...).wantExit(t, w, cmd.ExitUsage, false)
		startRun(t, w, "no-sites", "config", append(via, "--sites", filepath.Join(w.Dir, "none.yaml"))...).wantExit(t, w, cmd.ExitConfig, false)
		missing := "file:" + filepath.Join(w.Dir, "nowhere", "state.aso")
		if couch {
			missing = couchtest.Server(t) + couchtest.NewName()
		}
		startRun(t, w, "no-store", "config", append(via, "--state", missing)...).wantExit(t, w, cmd.ExitConfig, false)

		holdUserLock(t, w, "locked", "elsewhere.example.org:4242:77-0badf00d-x")
		startRun(t, w, "locked", "locked", via...).wantExit(t, w, cmd.ExitLocked, false, "elsewhere.example.org")

		// SIGTERM while FTS has not answered whoami: the lock is held
		front.set("whoami", hang)
		w.Add("term", proctest.Good, 1)
		r := startRun(t, w, "term-setup", "term", via...)
		if !r.p.WaitLog("run lock taken", time.Minute) {
			t.Fatalf("no run lock taken\n%s", r.p.Tail(20))
		}
		r.p.Term()
		r.wantExit(t, w, cmd.ExitOK, true, "stopping on request before the first pass")
		front.set("whoami", nil)

		// SIGTERM mid-run, jobs active; then a run whose every pass fails
		// (FTS answers no status request) gives up
		w.Add("slow", proctest.Good, 2)
		r = startRun(t, w, "term-run", "slow", via...)
		if !r.p.WaitLog(`"msg":"job submitted"`, time.Minute) {
			t.Fatalf("no job submitted\n%s", r.p.Tail(20))
		}
		r.p.Term()
		r.wantExit(t, w, cmd.ExitOK, true, "stopping on request")
		front.set("status", unavailable)
		startRun(t, w, "give-up", "slow", append(via, "--give-up-after", "1s", "--phase-timeout", "2s")...).wantExit(t, w, cmd.ExitTempFail, true, "giving up (--give-up-after)")

		// a second signal while the first waits for FTS: exit at once
		front.set("status", hang)
		asked := front.arrival("status")
		r = startRun(t, w, "twice", "slow", via...)
		select {
		case <-asked:
		case <-r.p.Done():
			t.Fatalf("the run ended before it asked FTS for its jobs\n%s", r.p.Tail(20))
		}
		r.p.Term()
		if !r.p.WaitLog(`"count":1`, time.Minute) {
			t.Fatalf("the first signal was not logged\n%s", r.p.Tail(20))
		}
		r.p.Term()
		r.wantExit(t, w, cmd.ExitError, false, "second signal: exiting at once")
		front.set("status", nil)

		if couch {
			startRun(t, w, "unreachable", "gone", append(via, "--state", closedURL(t)+"/aso")...).wantExit(t, w, cmd.ExitTempFail, false)
			// SIGTERM while the store does not answer: no lock was taken
			r = startRun(t, w, "term-store", "term", append(via, "--state", hangingURL(t)+"/aso", "--log-level", "debug")...)
			if !r.p.WaitLog("opening the state store", time.Minute) {
				t.Fatalf("the store was not opened\n%s", r.p.Tail(20))
			}
			r.p.Term()
			r.wantExit(t, w, cmd.ExitOK, false, "stopped by a signal before the agent started")
		}
	})
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// hangingURL is the URL of a server that never answers.
func hangingURL(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(hang))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFleetProcess_ExitCodesAgree: each agent of a fleet writes its own
// report and metrics file, whose exit code is the agent's (and its lock
// record's), and the fleet exits with the most severe; a report or metrics
// file that every agent would share is refused.
func TestFleetProcess_ExitCodesAgree(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Sim: exitSim(67), Seed: 67})
	w.Add("ann", proctest.Good, 3)
	w.Add("bob", proctest.Good, 3)
	dir := filepath.Join(w.Dir, "fleet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(w.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	// bob has no token file: his agent stops before it takes his lock
	if err := os.WriteFile(filepath.Join(dir, "ann.token"), tok, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--report", "--metrics-file"} {
		r := aso(t, append(fleetArgs(w), flag, filepath.Join(dir, "shared"))...).wantCode(t, cmd.ExitUsage)
		wantMatch(t, r.stderr, regexp.QuoteMeta(flag)+` .*: each agent of --all-users writes its own`)
	}
	p := w.Start("fleet", fleetArgs(w, "--token-file", filepath.Join(dir, "{user}.token"),
		"--report", filepath.Join(dir, "{user}.json"), "--metrics-file", filepath.Join(dir, "{user}.prom"))...)
	if code := p.Wait(2 * time.Minute); code != cmd.ExitConfig {
		t.Fatalf("fleet exit %d, want %d (bob's agent's)\n%s", code, cmd.ExitConfig, p.Tail(30))
	}
	for user, want := range map[string]int{"ann": cmd.ExitOK, "bob": cmd.ExitConfig} {
		r := &exitRun{p: p, user: user, report: filepath.Join(dir, user+".json"), metrics: filepath.Join(dir, user+".prom")}
		var rep struct {
			ExitCode int `json:"exit_code"`
		}
		b, err := os.ReadFile(r.report)
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil || rep.ExitCode != want {
			t.Errorf("%s's report: exit code %d (%v), want %d", user, rep.ExitCode, err, want)
		}
		if got, ok := metricsExitCode(t, r.metrics, user); !ok || got != want {
			t.Errorf("%s's metrics: exit code %d (found %v), want %d", user, got, ok, want)
		}
		// the fleet took each lock for the agent: bob's, which his agent
		// never took, the fleet released with his agent's exit code
		run := lastRunOf(t, w, user)
		if run == nil || run.ExitCode != want || (user == "bob") != strings.Contains(run.Error, "without releasing") {
			t.Errorf("%s's lock record: %+v, want exit %d (recorded by the fleet for bob)", user, run, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ls, err := w.Store().Locks(ctx, "bob"); err != nil || len(ls) != 1 || !ls[0].Expire.IsZero() {
		t.Errorf("bob's lock: %+v, %v; want one, released", ls, err)
	}
}
