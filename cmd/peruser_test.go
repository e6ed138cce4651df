package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// The per-user commands on a database crowded with other users'
// documents: what they ask CouchDB must not grow with those documents.

// couchRequests returns the CouchDB requests an invocation logged at
// --log-level debug --log-format json, as "METHOD path".
func couchRequests(t testing.TB, stderr string) []string {
	t.Helper()
	var out []string
	for _, e := range logLines(t.(*testing.T), stderr, "HTTP request") {
		if e["service"] == "couchdb" {
			out = append(out, fmt.Sprint(e["method"], " ", e["path"]))
		}
	}
	return out
}

// writes returns the requests of reqs that may write.
func writes(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if !strings.HasPrefix(r, "GET ") && !strings.Contains(r, "/_all_docs") && !strings.Contains(r, "/_view/") && !strings.Contains(r, "/_find") && !strings.Contains(r, "/_bulk_get") {
			out = append(out, r)
		}
	}
	return out
}

// crowdRequest is the i-th request of user in a crowd.
func crowdRequest(user string, i int) state.Request {
	return state.Request{
		User: user, Source: "T2_US_Nebraska", Destination: "T1_US_FNAL",
		SourceLFN:      fmt.Sprintf("/store/user/%s/src/f%06d.root", user, i),
		DestinationLFN: fmt.Sprintf("/store/user/%s/dst/f%06d.root", user, i),
		Size:           1000, Checksums: map[string]string{"adler32": "0a1b2c3d"},
	}
}

// crowd writes n transfers of ten other users ("crowd-0" ... "crowd-9")
// into the database at u as its admin, in bulk: most done, some failed,
// killed or still new, each with its history, as years of production
// leave them.
func crowd(t testing.TB, u string, n int) {
	t.Helper()
	now := time.Now().UTC().Add(-24 * time.Hour)
	const batch = 2000
	for lo := 0; lo < n; lo += batch {
		var docs []any
		for i := lo; i < min(n, lo+batch); i++ {
			tr := state.NewTransfer(crowdRequest(fmt.Sprintf("crowd-%d", i%10), i), now, "producer")
			switch i % 10 {
			case 7:
				tr.Transition(state.StateFailed, now, "host:1:old", "source file missing")
			case 8:
				tr.Transition(state.StateKilled, now, "host:1:old", "killed by request")
			case 9:
			default:
				tr.Transition(state.StateDone, now, "host:1:old", "")
			}
			docs = append(docs, tr)
		}
		b, _ := json.Marshal(map[string]any{"docs": docs})
		req, _ := http.NewRequest(http.MethodPost, couchtest.WithoutAuth(u)+"/_bulk_docs", bytes.NewReader(b))
		req.SetBasicAuth(couchtest.Auth(u))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("crowd: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("crowd: HTTP %d", resp.StatusCode)
		}
	}
}

// couchState returns a --state flag for a fresh database prepared by aso
// init, holding n transfers of other users.
func couchState(t *testing.T, n int) (flag, u string) {
	t.Helper()
	u = couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	crowd(t, u, n)
	return "--state=" + u, u
}

// coolingOff gives user one transfer, back in new after a failed attempt
// and waiting for its cool-off: a queue with nothing due.
func coolingOff(t *testing.T, u, user string) { t.Helper(); coolingOffFor(t, u, user, 0) }

// coolingOffFor is coolingOff with a cool-off of d (0: the default, 15 min).
func coolingOffFor(t *testing.T, u, user string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	s, err := couch.Open(ctx, couch.Options{URL: u}, state.Config{Agent: state.Agent{User: user, Owner: "host:1:x"}, Policy: state.Policy{CoolOff: d}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Enqueue(ctx, []state.Request{crowdRequest(user, 0)}); err != nil {
		t.Fatal(err)
	}
	c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 1})
	if err != nil || len(c.Transfers) != 1 {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	if _, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: c.Transfers[0], Reason: "no route"}}); err != nil {
		t.Fatal(err)
	}
}

// debugRun runs aso run for user against st, logging its requests.
func debugRun(t *testing.T, st, user, sites string) result {
	t.Helper()
	return aso(t, st, "--user", user, "--log-level", "debug", "--log-format", "json", "run", "--sites", sites, "--fts", "local", "--progress", "never", "--max-runtime", "5m").wantCode(t, 0)
}

// TestRun_IdleStartWaitsForACoolOff: a transfer whose cool-off ends before
// --max-runtime does is work, as the agent would wait for it: the start is
// not skipped, and the agent claims it once it is due.
func TestRun_IdleStartWaitsForACoolOff(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	st, u := couchState(t, 0)
	coolingOffFor(t, u, "alice", 2*time.Second)
	r := aso(t, st, "--user", "alice", "--log-level", "debug", "--log-format", "json", "run", "--sites", sites, "--fts", "local",
		"--progress", "never", "--max-runtime", "1m", "--interval", "3s", "--cool-off", "1h")
	if strings.Contains(r.stderr, "the agent does not start") || !strings.Contains(r.stderr, `"claimed":1`) {
		t.Fatalf("a run with a cool-off ending within --max-runtime: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRun_NoTransfersForUser: a run for a user who never had a transfer
// (a typo) exits 0 saying so, after one read of the user's work, and
// writes nothing: no run lock, no last run.
func TestRun_NoTransfersForUser(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	st, path := stateFile(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := aso(t, st, "--user", "typo", "run", "--sites", sites, "--progress", "never").wantCode(t, 0)
	wantMatch(t, r.stderr, `no transfers for user typo`)
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("a run for a user without transfers wrote the file store:\n%s", after)
	}

	cst, _ := couchState(t, 200)
	r = debugRun(t, cst, "typo", sites)
	wantMatch(t, r.stderr, `no transfers for user typo`)
	reqs := couchRequests(t, r.stderr)
	if w := writes(reqs); len(w) != 0 {
		t.Errorf("a run for a user without transfers wrote: %v", w)
	}
	if views := countWith(reqs, "/_view/"); views != 1 {
		t.Errorf("a run for a user without transfers read %d views, want 1: %v", views, reqs)
	}
	var v statusLocks
	if err := json.Unmarshal([]byte(aso(t, "status", cst, "--user", "typo", "--json").wantCode(t, 0).stdout), &v); err != nil || len(v.Locks) != 0 {
		t.Errorf("a run for a user without transfers left a lock: %+v (%v)", v.Locks, err)
	}
}

// countWith counts the requests whose text holds s.
func countWith(reqs []string, s string) int {
	n := 0
	for _, r := range reqs {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

// TestRun_IdleStartPerUser: an idle start (the user's only transfer cools
// off) makes at most 6 requests, writes nothing and does not say the queue
// drained; it makes as many on a database crowded with other users'
// transfers as on one without them.
func TestRun_IdleStartPerUser(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	var counts []int
	for _, n := range []int{0, 3000} {
		st, u := couchState(t, n)
		coolingOff(t, u, "alice")
		r := debugRun(t, st, "alice", sites)
		reqs := couchRequests(t, r.stderr)
		if len(reqs) > 6 || len(writes(reqs)) != 0 {
			t.Errorf("an idle start with %d other transfers: %d requests, writes %v; want at most 6 and none:\n%s", n, len(reqs), writes(reqs), strings.Join(reqs, "\n"))
		}
		if strings.Contains(r.stderr, "queue drained") || !strings.Contains(r.stderr, "the agent does not start") {
			t.Errorf("an idle start said:\n%s", r.stderr)
		}
		counts = append(counts, len(reqs))
	}
	if counts[0] != counts[1] {
		t.Errorf("an idle start made %d requests on an empty database and %d among other users' transfers", counts[0], counts[1])
	}
}

// TestPerUserCommands_ReadPerUser: status, list, retry, purge and kill of one
// user make as many requests on a database crowded with other users'
// transfers (more than a page of _all_docs) as on one without them, and
// none queries the Mango index of every user's transfers.
func TestPerUserCommands_ReadPerUser(t *testing.T) {
	commands := [][]string{
		{"status"}, {"list"}, {"list", "--in-state", "failed"}, {"list", "--limit", "1"},
		{"retry", "--failed"}, {"purge", "--older-than", "1h"}, {"kill", "--all"},
	}
	counts := map[int][]int{}
	for _, n := range []int{0, 3000} {
		st, u := couchState(t, n)
		coolingOff(t, u, "alice")
		for _, c := range commands {
			args := append([]string{st, "--user", "alice", "--log-level", "debug", "--log-format", "json"}, c...)
			r := aso(t, args...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d\n%s", c, r.code, r.stderr)
			}
			reqs := couchRequests(t, r.stderr)
			if f := countWith(reqs, "/_find"); f != 0 {
				t.Errorf("%v read the index of every user's transfers: %v", c, reqs)
			}
			counts[n] = append(counts[n], len(reqs))
		}
	}
	for i, c := range commands {
		if counts[0][i] != counts[3000][i] {
			t.Errorf("%v: %d requests without other users' transfers, %d among 3,000 of them", c, counts[0][i], counts[3000][i])
		}
	}
}
