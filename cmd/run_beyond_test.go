package cmd_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
)

type runReport struct {
	User           string                    `json:"user"`
	ExitCode       int                       `json:"exit_code"`
	Error          string                    `json:"error"`
	ByState        map[string]int            `json:"by_state"`
	ByLink         map[string]map[string]int `json:"by_link"`
	FTSJobsCreated int                       `json:"fts_jobs_created"`
	FTSStatusCalls int                       `json:"fts_status_calls"`
	FTSJobsPolled  int                       `json:"fts_jobs_polled"`
	Done           int                       `json:"done"`
	PhaseSeconds   map[string]float64        `json:"phase_seconds"`
}

func readReport(t *testing.T, path string) runReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var r runReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the report's directory holds %d entries, want only the report (no temporary file left)", len(entries))
	}
	return r
}

// TestRun_Report: --report writes one JSON document with the run's counts,
// FTS jobs and polls, phase durations and exit code.
func TestRun_Report(t *testing.T) {
	sites, requests, _ := localSites(t, 12)
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	path := filepath.Join(t.TempDir(), "report.json")
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--max-files-per-job", "5",
		"--progress", "never", "--report", path, "--scitag-activity", "9", "--max-active-per-link", "4").wantCode(t, 0)
	r := readReport(t, path)
	if r.User != "bob" || r.ExitCode != 0 || r.Error != "" {
		t.Errorf("report user %q exit %d error %q", r.User, r.ExitCode, r.Error)
	}
	if r.ByState["done"] != 12 || r.Done != 12 || r.ByLink["T2_XX_A->T1_XX_B"]["done"] != 12 {
		t.Errorf("report counts: by_state %v, done %d, by_link %v; want 12 done", r.ByState, r.Done, r.ByLink)
	}
	if r.FTSJobsCreated != 3 || r.FTSStatusCalls == 0 || r.FTSJobsPolled < 3 {
		t.Errorf("report FTS: %d jobs created, %d status calls, %d jobs polled; want 3, >0, >=3", r.FTSJobsCreated, r.FTSStatusCalls, r.FTSJobsPolled)
	}
	for _, p := range []string{"setup", "run", "submit", "monitor", "record", "report"} {
		if _, ok := r.PhaseSeconds[p]; !ok {
			t.Errorf("phase %s missing from %v", p, r.PhaseSeconds)
		}
	}
}

// TestRun_ReportOnEarlyFailure: a run refused at once still writes its
// report, with the exit code and the reason; a bad --scitag-activity is a
// usage error.
func TestRun_ReportOnEarlyFailure(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--scitag-activity", "64"}, cmd.ExitUsage, `--scitag-activity "64": out of range: want 1 to 63; 0: no scitag`},
		{[]string{"--scitag-activity", "-1"}, cmd.ExitUsage, `--scitag-activity "-1": out of range`},
		{[]string{"--storage-token-file", "a", "--storage-token-command", "b"}, cmd.ExitUsage, "give one"},
		{[]string{"--max-active-per-link", "-3"}, cmd.ExitUsage, `--max-active-per-link "-3": out of range: want 1 to 1000000; 0: no cap`},
	} {
		path := filepath.Join(t.TempDir(), "report.json")
		args := append([]string{"run", newState(t), "--user", "bob", "--sites", sites, "--report", path}, c.args...)
		res := aso(t, args...)
		res.wantCode(t, c.code)
		if !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, res.stderr, c.want)
		}
		r := readReport(t, path)
		if r.ExitCode != c.code || !strings.Contains(r.Error, c.want) || r.User != "bob" {
			t.Errorf("%v: report of %q, exit %d error %q, want bob's, %d and %q", c.args, r.User, r.ExitCode, r.Error, c.code, c.want)
		}
	}
}

// tokenSites turns the sites of localSites into sites that take storage
// tokens, with each site's directory as token base.
func tokenSites(t *testing.T, sites string) string {
	t.Helper()
	b, err := os.ReadFile(sites)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		out = append(out, line)
		if strings.HasPrefix(line, "  protocol: file") {
			out = append(out, "  tokens: true")
		}
	}
	p := filepath.Join(t.TempDir(), "token-sites.yaml")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func unsignedJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

// TestRun_StorageTokens: aso run with sites that take tokens runs the
// token command (no shell, the scope as an argument) and transfers; without
// a token source, or with a failing command, it stops with the reason,
// the transfers stay new, and no token is printed.
func TestRun_StorageTokens(t *testing.T) {
	sites, requests, dst := localSites(t, 6)
	sites = tokenSites(t, sites)
	tok := unsignedJWT(fmt.Sprintf(`{"iss":"https://iam.example.org/","sub":"bob","exp":%d,"scope":"storage.read:/ storage.modify:/"}`, time.Now().Add(48*time.Hour).Unix()))
	dir := t.TempDir()
	good := filepath.Join(dir, "good-token")
	bad := filepath.Join(dir, "bad-token")
	os.WriteFile(good, []byte("#!/bin/sh\necho \"$2\" >> "+dir+"/scopes\necho '"+tok+"'\n"), 0o700)
	os.WriteFile(bad, []byte("#!/bin/sh\necho 'refused, your token was "+tok+"' >&2\nexit 4\n"), 0o700)

	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never", "--interval", "20ms")
	if r.code != cmd.ExitConfig || !strings.Contains(r.stderr, "no token file or command is configured") {
		t.Fatalf("run without a token source: exit %d, stderr %s", r.code, r.stderr)
	}
	r = aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never", "--interval", "20ms",
		"--storage-token-command", bad+" --scope {scope}")
	if r.code != cmd.ExitConfig || !strings.Contains(r.stderr, "exit status 4") || strings.Contains(r.stderr, tok) {
		t.Fatalf("run with a failing token command: exit %d, stderr shows the token: %v\n%s", r.code, strings.Contains(r.stderr, tok), r.stderr)
	}
	wantMatch(t, aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0).stdout, `"new":\s*6`)

	aso(t, "run", st, "--user", "bob", "--sites", sites, "--progress", "never", "--interval", "20ms",
		"--storage-token-command", good+" --scope {scope}", "--unmanaged-tokens").wantCode(t, 0)
	wantMatch(t, aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0).stdout, `"done":\s*6`)
	if entries, err := os.ReadDir(dst); err != nil || len(entries) != 6 {
		t.Errorf("%d destination files (%v), want 6", len(entries), err)
	}
	scopes, _ := os.ReadFile(filepath.Join(dir, "scopes"))
	for _, want := range []string{"storage.read:", "storage.modify:"} {
		if !strings.Contains(string(scopes), want) {
			t.Errorf("the token command was asked for %q, want a %s scope", scopes, want)
		}
	}
}

// TestEnqueue_Activity: a request's activity is stored and shown with its
// scitag; one outside 0..63 is rejected, naming the field.
func TestEnqueue_Activity(t *testing.T) {
	st := newState(t)
	in := `{"user":"bob","source":"T2_XX_A","destination":"T1_XX_B","source_lfn":"/store/temp/user/bob/a","destination_lfn":"/store/user/bob/a","size":1,"activity":5}
{"user":"bob","source":"T2_XX_A","destination":"T1_XX_B","source_lfn":"/store/temp/user/bob/b","destination_lfn":"/store/user/bob/b","size":1,"activity":64}
`
	r := invocation{stdin: strings.NewReader(in)}.run(t, "enqueue", st, "-v", "-f", "-")
	r.wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stdout+r.stderr, "activity") {
		t.Fatalf("the rejection does not name the field:\n%s%s", r.stdout, r.stderr)
	}
	var stored struct {
		ID       string `json:"_id"`
		Activity int    `json:"activity"`
	}
	out := aso(t, "list", st, "--user", "bob", "--json").wantCode(t, 0).stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[0]), &stored); err != nil || len(lines) != 1 || stored.Activity != 5 {
		t.Fatalf("stored: %v %+v\n%s", err, stored, out)
	}
	wantMatch(t, aso(t, "status", st, stored.ID).wantCode(t, 0).stdout, `(?m)^Activity:\s+5 \(scitag 197\)$`)
}
