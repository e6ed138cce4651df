package cmd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// TestRun_ExitCodes checks that cron and systemd can tell what to do from
// the exit code of aso run: retry later (75) when a service does not
// answer, call a person (78) when the setup is wrong.
func TestRun_ExitCodes(t *testing.T) {
	sites, requests, _ := localSites(t, 2)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	for p, tok := range map[string]string{good: "good-token", bad: "wrong-token"} {
		if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := ftstest.NewServer(t, ftstest.Options{Tokens: []string{"good-token"}})
	queued := func(t *testing.T) string {
		st := newState(t)
		aso(t, "enqueue", st, "-f", requests).wantCode(t, cmd.ExitOK)
		return st
	}
	common := []string{"run", "--user", "bob", "--log-format", "json", "--progress", "never", "--phase-timeout", "3s", "--fts-timeout", "2s"}
	cases := []struct {
		name string
		args func(t *testing.T) []string
		want int
	}{
		{"sites file missing", func(t *testing.T) []string {
			return []string{queued(t), "--sites", filepath.Join(dir, "nowhere.yaml"), "--fts", srv.URL, "--token-file", good}
		}, cmd.ExitConfig},
		{"token refused by FTS", func(t *testing.T) []string {
			return []string{queued(t), "--sites", sites, "--fts", srv.URL, "--token-file", bad}
		}, cmd.ExitConfig},
		{"FTS unreachable", func(t *testing.T) []string {
			return []string{queued(t), "--sites", sites, "--fts", "https://" + closedPort(t), "--insecure", "--token-file", good}
		}, cmd.ExitTempFail},
		{"state store unreachable", func(t *testing.T) []string {
			return []string{"--state", "http://" + closedPort(t) + "/aso", "--sites", sites, "--fts", srv.URL, "--token-file", good}
		}, cmd.ExitTempFail},
		{"bad flag", func(t *testing.T) []string {
			return []string{queued(t), "--sites", sites, "--max-files-per-job", "many"}
		}, cmd.ExitUsage},
		{"negative --give-up-after", func(t *testing.T) []string {
			return []string{queued(t), "--sites", sites, "--fts", srv.URL, "--token-file", good, "--give-up-after", "-1m"}
		}, cmd.ExitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := aso(t, append(common, c.args(t)...)...)
			r.wantCode(t, c.want)
		})
	}
}

// TestExitCode_NoProgress: a run that gave up after passes that all failed
// without progress exits 75, to be tried again later, as an unreachable
// service does.
func TestExitCode_NoProgress(t *testing.T) {
	err := fmt.Errorf("run of bob: %w: every pass for 30m0s had errors", agent.ErrNoProgress)
	if code := cmd.ExitCode(err); code != cmd.ExitTempFail {
		t.Errorf("ExitCode(%v) = %d, want %d", err, code, cmd.ExitTempFail)
	}
}

// TestUsageError_Exits64: a bad flag, a bad setting and a bad argument exit
// 64, EX_USAGE of sysexits.h, as 75 and 78 come from there too; 2 is what
// a shell gives a misused builtin, and cron mails would not tell them apart.
func TestUsageError_Exits64(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--max-files-per-job", "many"},
		{"status", "--no-such-flag"},
		{"resolve", "only-one-argument"},
	} {
		if r := aso(t, args...); r.code != 64 {
			t.Errorf("aso %v: exit %d, want 64\nstderr: %s", args, r.code, r.stderr)
		}
	}
	if r := (invocation{env: map[string]string{"ASO_BATCH_SIZE": "0"}}).run(t, "config"); r.code != 64 {
		t.Errorf("aso config with ASO_BATCH_SIZE=0: exit %d, want 64", r.code)
	}
}
