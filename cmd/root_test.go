package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

func TestExecute_UsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"status", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"bad flag value", []string{"status", "--stale-after", "soon"}, `--stale-after "soon": want a duration`},
		{"bad log level", []string{"--log-level", "loud", "version"}, `--log-level "loud"`},
		{"bad log format", []string{"--log-format", "xml", "version"}, `--log-format "xml"`},
		{"completion without shell", []string{"completion"}, "accepts 1 arg(s)"},
		{"completion unknown shell", []string{"completion", "tcsh"}, `invalid argument "tcsh"`},
		{"missing config file", []string{"--config", "/nonexistent/aso.yaml", "version"}, "/nonexistent/aso.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := aso(t, tc.args...).wantCode(t, cmd.ExitUsage)
			if !strings.HasPrefix(r.stderr, "aso: ") || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr %q, want an aso: line containing %q", r.stderr, tc.want)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_aso",
		"zsh":        "#compdef aso",
		"fish":       "complete -c aso",
		"powershell": "Register-ArgumentCompleter",
	} {
		t.Run(shell, func(t *testing.T) {
			r := aso(t, "completion", shell).wantCode(t, 0)
			if !strings.Contains(r.stdout, marker) {
				t.Fatalf("%s script lacks %q:\n%.400s", shell, marker, r.stdout)
			}
		})
	}
	t.Run("the scripts' callback completes commands and flags", func(t *testing.T) {
		r := aso(t, "__complete", "st").wantCode(t, 0)
		if !strings.Contains(r.stdout, "status\t") {
			t.Fatalf("completing %q: %q, want status", "st", r.stdout)
		}
		r = aso(t, "__complete", "status", "--all").wantCode(t, 0)
		if !strings.Contains(r.stdout, "--all-users") {
			t.Fatalf("completing status --all: %q, want --all-users", r.stdout)
		}
		r = aso(t, "__complete", "completion", "").wantCode(t, 0)
		for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
			if !strings.Contains(r.stdout, sh) {
				t.Fatalf("completing the shell: %q, want %s", r.stdout, sh)
			}
		}
	})
}

// writeConfig writes a YAML configuration file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aso.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLog_JSONWithoutSecrets checks that --log-format json writes JSON lines
// and that a password in the --state URL shows neither in logs nor errors.
func TestLog_JSONWithoutSecrets(t *testing.T) {
	r := aso(t, "--log-format", "json", "--log-level", "debug", "--user", "alice",
		"--state", "bogus://admin:s3cret@db.example:5984/aso", "status").wantCode(t, cmd.ExitUsage)
	if strings.Contains(r.stderr+r.stdout, "s3cret") {
		t.Fatalf("the password leaked:\n%s%s", r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) < 2 {
		t.Fatalf("stderr %q: want a log line and the error", r.stderr)
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatalf("log line %q is not JSON: %v", lines[0], err)
	}
	if got, want := entry["state"], "bogus://admin:xxxxx@db.example:5984/aso"; got != want {
		t.Errorf("state field %v, want %v", got, want)
	}
	if got, want := entry["user"], "alice"; got != want {
		t.Errorf("user field %v, want %v", got, want)
	}
	if entry["level"] != "debug" || entry["msg"] == nil || entry["time"] == nil {
		t.Errorf("log entry %v lacks level, msg or time", entry)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "bogus://admin:xxxxx@db.example") {
		t.Errorf("error line %q, want the redacted URL", last)
	}
}

// TestConfig_PrecedenceOfUser observes the user that status reports for,
// with the store itself named in the config file.
func TestConfig_PrecedenceOfUser(t *testing.T) {
	flag, path := stateFile(t)
	createStore(t, flag)
	cfg := writeConfig(t, "state: file:"+path+"\nuser: carol\nlog-level: warn\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"config file over the login name", map[string]string{"USER": "login"}, nil, "carol"},
		{"ASO_USER over config", map[string]string{"USER": "login", "ASO_USER": "bob"}, nil, "bob"},
		{"flag over ASO_USER", map[string]string{"ASO_USER": "bob"}, []string{"--user", "alice"}, "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--config", cfg}, tc.args...)
			r := invocation{env: tc.env}.run(t, append(args, "status", "--json")...).wantCode(t, 0)
			if want := `"user": "` + tc.want + `"`; !strings.Contains(r.stdout, want) {
				t.Fatalf("stdout lacks %s:\n%s", want, r.stdout)
			}
			if r.stderr != "" {
				t.Errorf("log-level warn from the config file: stderr %q", r.stderr)
			}
		})
	}
	flag = newState(t)
	createStore(t, flag)
	r := invocation{env: map[string]string{"USER": "login"}}.run(t, flag, "status", "--json").wantCode(t, 0)
	if !strings.Contains(r.stdout, `"user": "login"`) {
		t.Errorf("without --user: want the login name:\n%s", r.stdout)
	}
}

// TestLog_JSONLinesOfACommand: with --log-format json every line on standard
// error, but the final error, is a JSON object carrying the command's counts.
func TestLog_JSONLinesOfACommand(t *testing.T) {
	in := `{"size": 1, "user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/a", "destination_lfn": "/a"}
{"size": 1, "user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "a", "destination_lfn": "/a"}
`
	r := invocation{stdin: strings.NewReader(in)}.run(t, newState(t), "--log-format", "json", "--user", "alice", "enqueue").wantCode(t, cmd.ExitUsage)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "aso: enqueue: 1 record(s) rejected") {
		t.Fatalf("last line %q, want the error", last)
	}
	var found bool
	for _, l := range lines[:len(lines)-1] {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if e["msg"] == "enqueue finished" {
			found = true
			if e["stored"] != 1.0 || e["rejected"] != 1.0 || e["user"] != "alice" || e["level"] != "info" {
				t.Errorf("enqueue finished: %v", e)
			}
		}
	}
	if !found {
		t.Errorf("no enqueue finished line in %q", r.stderr)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://admin:s3cret@db:5984/aso":  "http://admin:xxxxx@db:5984/aso",
		"couchdb://admin:p@ss@db:5984/aso": "couchdb://admin:xxxxx@db:5984/aso",
		"http://admin:p/ss@db:5984/aso":    "http://xxxxx@db:5984/aso",
		"http://reader@db:5984/aso":        "http://reader@db:5984/aso",
		"file:/var/lib/aso/state.aso":      "file:/var/lib/aso/state.aso",
		"file:///data/a@b/state.aso":       "file:///data/a@b/state.aso",
	} {
		if got := cmd.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
