package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"--scitag-activity", "64"}, 2, "--scitag-activity 64: want 0..63"},
		{[]string{"--scitag-activity", "-1"}, 2, `--scitag-activity "-1": must be positive`},
		{[]string{"--storage-token-file", "a", "--storage-token-command", "b"}, 2, "give one"},
		{[]string{"--max-active-per-link", "-3"}, 2, `--max-active-per-link "-3": must be positive`},
	} {
		path := filepath.Join(t.TempDir(), "report.json")
		args := append([]string{"run", newState(t), "--user", "bob", "--sites", sites, "--report", path}, c.args...)
		res := aso(t, args...)
		res.wantCode(t, c.code)
		if !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, res.stderr, c.want)
		}
		r := readReport(t, path)
		if r.ExitCode != c.code || !strings.Contains(r.Error, c.want) {
			t.Errorf("%v: report exit %d error %q, want %d and %q", c.args, r.ExitCode, r.Error, c.code, c.want)
		}
	}
}
