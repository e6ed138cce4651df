package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestFleetProcess_SkipsBadUserNames: CouchDB holds due transfers of
// users whose names are not user names (written before the rule, or by a
// producer without it). The fleet skips those users, saying why once each
// and in its last line, and drains the others: it exits 0, never failing
// the round for everyone; aso status --all-users lists the transfers as
// invalid documents with the reason, and aso serve's /metrics counts them.
func TestFleetProcess_SkipsBadUserNames(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(61), Seed: 61})
	w.Add("ann", proctest.Good, 3)
	bad := []string{"../victim", "/etc/passwd"}
	writeBeforeTheRule(t, w, bad)

	p := w.Start("fleet", fleetArgs(w, "--max-agents", "2")...)
	if code := p.Wait(time.Minute); code != cmd.ExitOK {
		t.Fatalf("fleet exit %d, want 0\n%s", code, p.Tail(40))
	}
	if started := agentsStarted(p); len(started) != 1 || started[0] != "ann" {
		t.Errorf("agents started for %v, want ann's only", started)
	}
	warned := map[string]int{}
	var last string
	for _, l := range p.LogLines() {
		msg := fmt.Sprint(l["msg"])
		for _, u := range bad {
			if strings.HasPrefix(msg, fmt.Sprintf("user %q skipped: ", u)) && l["level"] == "warning" {
				warned[u]++
			}
		}
		if msg == "fleet finished" {
			last = fmt.Sprint(l["skipped_users"])
		}
	}
	for _, u := range bad {
		if warned[u] != 1 {
			t.Errorf("the fleet warned %d times of %q, want once", warned[u], u)
		}
		if want := fmt.Sprintf("%q (user %q: not a user name", u, u); !strings.Contains(last, want) {
			t.Errorf("the fleet's last line names skipped users %q, want %s", last, want)
		}
	}
	if r := w.Check(proctest.CheckOptions{}); r.Done != 3 {
		t.Errorf("%s: want ann's 3 done", r)
	}
	var out, errb strings.Builder
	code := cmd.ExecuteWith(context.Background(), []string{"status", "--all-users", "--state", w.StateURL},
		cmd.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, LookupEnv: w.LookupEnv})
	if code != 0 || !strings.Contains(out.String(), "Invalid documents (skipped by the agent): 2") ||
		!strings.Contains(out.String(), `user "../victim": not a user name`) {
		t.Errorf("status --all-users: exit %d, want the two documents listed invalid with the reason\n%s%s", code, out.String(), errb.String())
	}
	u := startServeEnv(t, w.LookupEnv, "--state", w.StateURL)
	resp, err := http.Get(u + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^aso_fleet_invalid_user_transfers 2$`).Match(body) {
		t.Errorf("/metrics: %d, want aso_fleet_invalid_user_transfers 2:\n%s", resp.StatusCode, body)
	}
}

// writeBeforeTheRule stores a due transfer of each of users, whose names
// aso's rule refuses, as a store written before the rule holds them.
func writeBeforeTheRule(t *testing.T, w *proctest.World, users []string) {
	t.Helper()
	creds, err := os.ReadFile(w.Env["ASO_COUCHDB_CREDENTIALS_ADMIN"])
	if err != nil {
		t.Fatal(err)
	}
	name, pass, _ := strings.Cut(strings.TrimSpace(string(creds)), ":")
	docs := map[string][]byte{}
	for i, u := range users {
		r := state.Request{User: u, Source: proctest.SourceSite, Destination: proctest.DestinationSite,
			SourceLFN: fmt.Sprintf("/store/old/%d.root", i), DestinationLFN: fmt.Sprintf("/store/old/%d.root", i), Size: 1}
		docs[r.ID()], _ = json.Marshal(state.NewTransfer(r, time.Now().Add(-time.Hour), "old-producer"))
	}
	couchtest.PutUnchecked(t, couchtest.As(w.StateURL, name, pass), docs)
}
