package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// logLines returns the JSON log lines of stderr whose msg is msg.
func logLines(t *testing.T, stderr, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(stderr, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// TestLog_HTTPRequestsAtDebug: --log-level debug logs every request to FTS
// and CouchDB with method, path, status and duration, and no query string.
func TestLog_HTTPRequestsAtDebug(t *testing.T) {
	sites, requests, _ := localSites(t, 2)
	st := newState(t)
	aso(t, st, "--user", "bob", "enqueue", "-f", requests).wantCode(t, 0)
	r := aso(t, st, "--user", "bob", "--log-level", "debug", "--log-format", "json", "run", "--sites", sites, "--interval", "20ms", "--progress", "never").wantCode(t, 0)
	var submits int
	for _, e := range logLines(t, r.stderr, "HTTP request") {
		if e["service"] != "fts" || e["duration"] == nil || e["status"] == nil {
			t.Errorf("HTTP log line %v lacks service, duration or status", e)
		}
		if strings.ContainsAny(e["path"].(string), "?") {
			t.Errorf("HTTP log line %v shows a query", e)
		}
		if e["method"] == "POST" && e["path"] == "/jobs" && e["status"] == 200.0 {
			submits++
		}
	}
	if submits == 0 {
		t.Fatalf("no submission logged:\n%s", r.stderr)
	}
	r = aso(t, st, "--user", "bob", "--log-format", "json", "run", "--sites", sites, "--once", "--progress", "never").wantCode(t, 0)
	if n := len(logLines(t, r.stderr, "HTTP request")); n != 0 {
		t.Errorf("%d HTTP lines at --log-level info", n)
	}

	db := couchtest.DB(t)
	r = aso(t, "--state", db, "--user", "bob", "--log-level", "debug", "--log-format", "json", "status")
	lines := logLines(t, r.stderr, "HTTP request")
	if len(lines) == 0 || lines[0]["service"] != "couchdb" {
		t.Fatalf("no CouchDB request logged:\n%s", r.stderr)
	}
}

// TestLog_FTSRetriesAtWarn: an unreachable FTS is not silence: each retry
// is a warning saying which request waits, for how long, and why.
func TestLog_FTSRetriesAtWarn(t *testing.T) {
	sites, requests, _ := localSites(t, 1)
	st := newState(t)
	aso(t, st, "--user", "bob", "enqueue", "-f", requests).wantCode(t, 0)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := aso(t, st, "--user", "bob", "--log-format", "json", "run", "--sites", sites, "--fts", "http://127.0.0.1:1",
		"--token-file", tok, "--phase-timeout", "2s", "--progress", "never")
	if r.code == 0 {
		t.Fatalf("aso run with an unreachable FTS exited 0:\n%s", r.stderr)
	}
	lines := logLines(t, r.stderr, "FTS request failed; retrying")
	if len(lines) == 0 {
		t.Fatalf("no retry warning:\n%s", r.stderr)
	}
	e := lines[len(lines)-1]
	if e["level"] != "warning" || e["path"] == nil || e["waited"] == nil || e["retry_in"] == nil || !strings.Contains(e["error"].(string), "refused") {
		t.Errorf("retry warning %v lacks level, path, waited, retry_in or the error", e)
	}
}
