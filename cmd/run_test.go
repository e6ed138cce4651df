package cmd_test

import (
	"encoding/json"
	"fmt"
	"hash/adler32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/srm"
)

// localSites writes two file:// sites, n source files and their requests
// (JSON lines) under a temporary directory; it returns the sites file, the
// requests file and the destination root.
func localSites(t *testing.T, n int) (sites, requests, dstRoot string) {
	t.Helper()
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("gfal-rm not found: %s", srm.GfalRmInstallHint())
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	sites = filepath.Join(dir, "sites.yaml")
	body := fmt.Sprintf("T2_XX_A:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"T1_XX_B:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n", src, dst)
	if err := os.WriteFile(sites, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 0; i < n; i++ {
		lfn := fmt.Sprintf("/store/temp/user/bob/f%03d", i)
		data := []byte(strings.Repeat(fmt.Sprintf("file %d;", i), 50+i))
		p := filepath.Join(src, lfn)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		req := map[string]any{"user": "bob", "source": "T2_XX_A", "destination": "T1_XX_B", "source_lfn": lfn,
			"destination_lfn": fmt.Sprintf("/store/user/bob/f%03d", i), "size": len(data),
			"checksums": map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}}
		b, _ := json.Marshal(req)
		lines = append(lines, string(b))
	}
	requests = filepath.Join(dir, "requests.jsonl")
	if err := os.WriteFile(requests, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sites, requests, filepath.Join(dst, "store/user/bob")
}

// TestRun_LocalDefault runs the agent on its embedded default (file state,
// in-process simulator, real copies) and checks the outcomes, the copies,
// the summary and the metrics file.
func TestRun_LocalDefault(t *testing.T) {
	sites, requests, dst := localSites(t, 30)
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	metrics := filepath.Join(t.TempDir(), "aso.prom")
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--max-files-per-job", "7",
		"--metrics-file", metrics, "--progress", "never")
	r.wantCode(t, 0)
	if r.stdout != "" {
		t.Errorf("run wrote to stdout (its summary is a log record):\n%s", r.stdout)
	}
	wantMatch(t, r.stderr, `"done":30,.*"failed":0,.*"fts_jobs":5,.*"msg":"run summary".*"submitted":30`)
	var sum struct {
		ByState map[string]int `json:"by_state"`
	}
	out := aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0)
	if err := json.Unmarshal([]byte(out.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.ByState["done"] != 30 {
		t.Errorf("status by_state = %v, want 30 done", sum.ByState)
	}
	entries, err := os.ReadDir(dst)
	if err != nil || len(entries) != 30 {
		t.Errorf("%d destination files (%v), want 30", len(entries), err)
	}
	prom, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatalf("metrics file: %v", err)
	}
	wantMatch(t, string(prom), `aso_transfers_total\{outcome="done",user="bob"\} 30`, `aso_request_duration_seconds_count\{op="submit",service="fts",user="bob"\} 5`,
		`aso_passes_total\{user="bob"\} [1-9]`, `aso_run_exit_code\{user="bob"\} 0\n`, `aso_run_start_time_seconds\{user="bob"\} 1\.\d+e\+09`,
		`aso_run_end_time_seconds\{user="bob"\} 1\.\d+e\+09`, `aso_queue_transfers\{state="done",user="bob"\} 30\n`,
		`aso_queue_transfers\{state="new",user="bob"\} 0\n`, `aso_oldest_waiting_seconds\{user="bob"\} 0\n`)
	if strings.Contains(string(prom), "aso_failed_transfers{") {
		t.Errorf("failures by class without a failure:\n%s", prom)
	}
}

// TestRun_DryRun claims nothing and prints the jobs that would be
// submitted, with the priorities of their transfers (several of which map
// to one FTS priority).
func TestRun_DryRun(t *testing.T) {
	sites, requests, dst := localSites(t, 12)
	b, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := range 4 { // priorities 10 and 20: FTS priority 5, one job
		lines[i] = strings.Replace(lines[i], "{", fmt.Sprintf(`{"priority": %d, `, 10+10*(i%2)), 1)
	}
	st := newState(t)
	invocation{stdin: strings.NewReader(strings.Join(lines, "\n"))}.run(t, "enqueue", st).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--dry-run", "--max-files-per-job", "5").wantCode(t, 0).
		wantStdout(t, "dry run: 12 transfers eligible, 3 FTS jobs would be submitted",
			"job T2_XX_A -> T1_XX_B priority 10..20 (FTS priority 5): 4 files",
			"job T2_XX_A -> T1_XX_B priority 0 (FTS priority 3): 5 files")
	out := aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0)
	wantMatch(t, out.stdout, `"new":\s*12`)
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a dry run copied files: %v", err)
	}
}

// TestRun_Usage: missing sites file and bad flags are usage errors.
func TestRun_Usage(t *testing.T) {
	st := newState(t)
	r := aso(t, "run", st, "--user", "bob").wantCode(t, cmd.ExitUsage)
	wantMatch(t, r.stderr, `no sites file: give --sites`)
	aso(t, "run", st, "--user", "bob", "--sites", "x", "--interval", "soon").wantCode(t, cmd.ExitUsage)
	r = aso(t, "run", st, "--user", "bob", "--sites", filepath.Join(t.TempDir(), "none.yaml")).wantCode(t, cmd.ExitConfig)
	wantMatch(t, r.stderr, `sites file`)
}

// TestRun_FailureReasons: aso status tells the user why transfers failed,
// counted by reason.
func TestRun_FailureReasons(t *testing.T) {
	sites, requests, _ := localSites(t, 6)
	src := filepath.Join(filepath.Dir(sites), "src", "store/temp/user/bob")
	for _, f := range []string{"f001", "f004"} {
		if err := os.Remove(filepath.Join(src, f)); err != nil {
			t.Fatal(err)
		}
	}
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	metrics := filepath.Join(t.TempDir(), "aso.prom")
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--progress", "never", "--metrics-file", metrics).
		wantCode(t, 0)
	prom, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	wantMatch(t, string(prom), `aso_failed_transfers\{error_class="source_missing",user="bob"\} 2\n`)
	wantMatch(t, r.stderr, `"done":4,.*"failed":2,.*"msg":"run summary"`,
		`\{"acquired":0,"done":4,"failed":2,"killed":0,"level":"info","msg":"queue after the run","new":0,"submitted":0,`)
	out := aso(t, "status", st, "--user", "bob").wantCode(t, 0)
	// nothing of the transfer was written there, so nothing was deleted (the
	// deletion rule; docs/guarantees.md)
	wantMatch(t, out.stdout, `(?m)^2\s+failed\s+source_missing\s+SOURCE \[2\] No such file or directory; left in place: no attempt of this transfer began writing there`)
	js := aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0)
	wantMatch(t, js.stdout, `"reason": "SOURCE \[2\] No such file or directory; left in place: no attempt of this transfer began writing there[^"]*",\s+"state": "failed",\s+"count": 2`)
}

// TestRun_MonitorGroup: --monitor-group bounds the transfers the monitor
// reads at a time. With groups of one job, a pass over five jobs lists
// transfers more often than it lists jobs; with the default, one group
// holds them all.
func TestRun_MonitorGroup(t *testing.T) {
	count := func(prom, op string) int {
		m := regexp.MustCompile(`aso_request_duration_seconds_count\{op="` + op + `",service="state",user="bob"\} (\d+)`).FindStringSubmatch(prom)
		if m == nil {
			t.Fatalf("metrics lack the count of %s:\n%s", op, prom)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, tc := range []struct {
		name  string
		args  []string
		split bool
	}{
		{"default", nil, false},
		{"one job per group", []string{"--monitor-group", "7"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sites, requests, _ := localSites(t, 30)
			st := newState(t)
			aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
			metrics := filepath.Join(t.TempDir(), "aso.prom")
			args := append([]string{"run", st, "--user", "bob", "--sites", sites, "--interval", "20ms", "--max-files-per-job", "7",
				"--sim-transfer-time", "200ms", "--metrics-file", metrics, "--progress", "never"}, tc.args...)
			r := aso(t, args...).wantCode(t, 0)
			wantMatch(t, r.stderr, `"done":30,.*"failed":0,.*"fts_jobs":5,.*"msg":"run summary"`)
			prom, err := os.ReadFile(metrics)
			if err != nil {
				t.Fatal(err)
			}
			jobs, groups := count(string(prom), "active_jobs"), count(string(prom), "active_transfers_of")
			if tc.split && groups <= jobs || !tc.split && groups > jobs {
				t.Errorf("%d listings of active jobs, %d of their transfers (split into groups: %v)", jobs, groups, tc.split)
			}
		})
	}
}

// TestRun_MetricsOnEarlyFailure: a run that fails before its agent starts
// (a missing sites file) or whose settings are refused (a usage error)
// still writes its metrics file, with its exit code.
func TestRun_MetricsOnEarlyFailure(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--sites", filepath.Join(t.TempDir(), "none.yaml")}, cmd.ExitConfig},
		{[]string{"--cool-off", "0"}, cmd.ExitUsage},
	} {
		metrics := filepath.Join(t.TempDir(), "aso.prom")
		aso(t, append([]string{"run", newState(t), "--user", "carol", "--metrics-file", metrics}, c.args...)...).wantCode(t, c.code)
		prom, err := os.ReadFile(metrics)
		if err != nil {
			t.Fatalf("%v: no metrics file after an early failure: %v", c.args, err)
		}
		wantMatch(t, string(prom), fmt.Sprintf(`aso_run_exit_code\{user="carol"\} %d\n`, c.code), `aso_run_end_time_seconds\{user="carol"\} 1\.\d+e\+09`)
	}
}
