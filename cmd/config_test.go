package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

func TestConfig_BadValuesAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		file string
		args []string
		want string
	}{
		{"zero cool-off flag", nil, "", []string{"--cool-off", "0"}, `--cool-off "0s": out of range: want 1ms to 720h`},
		{"negative cool-off", nil, "", []string{"--cool-off=-1m"}, `--cool-off "-1m0s": out of range: want 1ms to 720h`},
		{"zero batch size", nil, "", []string{"--batch-size", "0"}, `--batch-size "0": out of range: want 1 to 100000`},
		{"progress word", nil, "", []string{"--progress", "sometimes"}, `--progress "sometimes": want auto, always, never`},
		{"max-time-in-queue word", nil, "", []string{"--max-time-in-queue", "banana"}, `--max-time-in-queue "banana"`},
		{"max-time-in-queue fraction", nil, "", []string{"--max-time-in-queue", "1.5h"}, `--max-time-in-queue "1.5h"`},
		{"failure rate above one", nil, "", []string{"--sim-failure-rate", "2"}, `--sim-failure-rate "2": out of range: want 0 to 1`},
		{"zero from the environment", map[string]string{"ASO_COOL_OFF": "0"}, "", nil, `--cool-off "0" (from ASO_COOL_OFF): out of range: want 1ms to 720h`},
		{"empty environment variable is empty", map[string]string{"ASO_INTERVAL": ""}, "", nil, `--interval "" (from ASO_INTERVAL)`},
		{"zero from the file", nil, "cool-off: 0\n", nil, `--cool-off "0" (from config file `},
		{"malformed from the file", nil, "lease-ttl: soon\n", nil, `--lease-ttl "soon" (from config file `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeConfig(t, tc.file)}, args...)
			}
			r := invocation{env: tc.env}.run(t, append([]string{"run"}, args...)...).wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr %q, want %q", r.stderr, tc.want)
			}
		})
	}
	// Zero where it has a documented meaning, and well-formed values, pass
	// the checks: the run stops later, for want of a sites file.
	r := aso(t, "run", "--user", "alice", "--max-runtime", "0", "--fts-retry", "-1", "--max-time-in-queue", "90m", "--progress", "never").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "no sites file") {
		t.Fatalf("stderr %q, want the checks passed and the sites file missing", r.stderr)
	}
}

func TestConfig_UnknownKeys(t *testing.T) {
	cfg := writeConfig(t, "user: alice\ncool-off: 5m\nstate: file:"+filepath.Join(t.TempDir(), "s.aso")+"\n")
	// cool-off is a setting of run, not of init or enqueue: one file serves all commands.
	aso(t, "--config", cfg, "init").wantCode(t, 0)
	aso(t, "--config", cfg, "enqueue").wantCode(t, 0)

	cfg = writeConfig(t, "user: alice\ncooloff: 5m\nrun:\n  interval: 1s\n")
	r := aso(t, "--config", cfg, "enqueue").wantCode(t, cmd.ExitUsage)
	for _, want := range []string{cfg, "cooloff", "run.interval"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	if strings.Contains(r.stderr, "user") {
		t.Errorf("stderr %q names a known key", r.stderr)
	}
}

func TestConfig_SearchPath(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	write := func(dir, scheme string) {
		p := filepath.Join(dir, "aso", "aso.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("state: "+scheme+":/x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".config"), "homescheme")
	write(xdg, "xdgscheme")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"home", map[string]string{"HOME": home}, `unknown scheme "homescheme"`},
		{"XDG_CONFIG_HOME over home", map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}, `unknown scheme "xdgscheme"`},
		{"ASO_CONFIG over the search path", map[string]string{"HOME": home, "ASO_CONFIG": filepath.Join(xdg, "aso", "aso.yaml")}, `unknown scheme "xdgscheme"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invocation{env: tc.env}.run(t, "--user", "alice", "status").wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr %q, want %q", r.stderr, tc.want)
			}
		})
	}
	// ASO_CONFIG set but empty: no file, so the default file store is used
	// (init creates it); ASO_STATE set but empty: the default store, not
	// the file's value.
	for _, unset := range []string{"ASO_CONFIG", "ASO_STATE"} {
		env := map[string]string{"HOME": home, unset: "", "XDG_STATE_HOME": t.TempDir()}
		invocation{env: env}.run(t, "init").wantCode(t, 0)
		if _, err := os.Stat(filepath.Join(env["XDG_STATE_HOME"], "aso", "state.aso")); err != nil {
			t.Fatalf("%s=: the default store was not created: %v", unset, err)
		}
		invocation{env: env}.run(t, "--user", "alice", "enqueue").wantCode(t, 0)
	}
}

func TestConfig_Command(t *testing.T) {
	cfg := writeConfig(t, "cool-off: 5m\nstate: http://admin:filesecret@db.example:5984/aso\n")
	env := map[string]string{"ASO_COUCHDB_PASSWORD": "envsecret", "ASO_INTERVAL": "3s", "ASO_YES": "true"}
	r := invocation{env: env}.run(t, "--config", cfg, "--log-level", "warn", "config").wantCode(t, 0)
	if strings.Contains(r.stdout, "filesecret") || strings.Contains(r.stdout, "envsecret") {
		t.Fatalf("a secret shows:\n%s", r.stdout)
	}
	wantMatch(t, r.stdout,
		`config file: `+regexp.QuoteMeta(cfg)+` \(from --config\)`,
		`(?m)^\(all\)\s+log-level\s+warn\s+flag$`,
		`(?m)^\(all\)\s+state\s+http://admin:xxxxx@db.example:5984/aso\s+file `+regexp.QuoteMeta(cfg)+`$`,
		`(?m)^\(couchdb\)\s+couchdb-password\s+xxxxx\s+environment ASO_COUCHDB_PASSWORD$`,
		`(?m)^run\s+cool-off\s+5m0s\s+file `,
		`(?m)^run\s+interval\s+3s\s+environment ASO_INTERVAL$`,
		`(?m)^run\s+lease-ttl\s+15m0s\s+default$`,
		`(?m)^status\s+stale-after\s+45m0s\s+default$`, // the value status uses, not a placeholder
		`(?m)^kill\s+yes\s+true\s+environment ASO_YES$`, `(?m)^purge\s+yes\s+true\s+environment ASO_YES$`,
		`(?m)^retry\s+yes\s+true\s+environment ASO_YES$`, `(?m)^kill\s+dry-run\s+false\s+default$`,
		`(?m)^purge\s+dry-run\s+false\s+default$`, `(?m)^retry\s+dry-run\s+false\s+default$`,
	)
	if strings.Contains(r.stdout, "fleet-agent") {
		t.Errorf("config shows the hidden flag aso sets on a fleet's agents:\n%s", r.stdout)
	}
	// A bad value is shown, and config exits 64 naming it.
	r = invocation{env: map[string]string{"ASO_BATCH_SIZE": "0"}}.run(t, "config").wantCode(t, cmd.ExitUsage)
	wantMatch(t, r.stdout, `(?m)^run\s+batch-size\s+0\s+environment ASO_BATCH_SIZE$`)
	if !strings.Contains(r.stderr, `run: --batch-size "0" (from ASO_BATCH_SIZE): out of range: want 1 to 100000`) {
		t.Errorf("stderr %q, want the bad value named", r.stderr)
	}
}

func TestVersionFlag(t *testing.T) {
	r := aso(t, "--version").wantCode(t, 0)
	v := aso(t, "version").wantCode(t, 0)
	if !strings.HasPrefix(r.stdout, "aso ") || r.stdout != v.stdout {
		t.Fatalf("--version printed %q, version printed %q", r.stdout, v.stdout)
	}
}

// TestConfig_JSON: aso config --json gives the file, every setting with
// its value, source and environment variable, secrets masked, and the
// values that are not valid, exiting 2 for them.
func TestConfig_JSON(t *testing.T) {
	cfg := writeConfig(t, "cool-off: 30m\nlease-ttl: soon\n")
	env := map[string]string{"ASO_CONFIG": cfg, "ASO_COUCHDB_PASSWORD": "s3cret", "ASO_STATE": "http://aso:pw@db:5984/aso"}
	r := invocation{env: env}.run(t, "config", "--json").wantCode(t, cmd.ExitUsage)
	var out struct {
		ConfigFile struct{ Path, From string } `json:"config_file"`
		Settings   []struct{ Command, Name, Value, Source, Env string }
		Errors     []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, r.stdout)
	}
	if out.ConfigFile.Path != cfg || out.ConfigFile.From != "ASO_CONFIG" {
		t.Errorf("config_file %+v, want %s from ASO_CONFIG", out.ConfigFile, cfg)
	}
	got := map[string]string{}
	for _, s := range out.Settings {
		got[s.Command+" "+s.Name] = s.Value + " | " + s.Source + " | " + s.Env
	}
	for k, want := range map[string]string{
		"run cool-off":               "30m0s | file " + cfg + " | ASO_COOL_OFF",
		"run interval":               "1m0s | default | ASO_INTERVAL",
		"(couchdb) couchdb-password": "xxxxx | environment ASO_COUCHDB_PASSWORD | ASO_COUCHDB_PASSWORD",
		"(all) state":                "http://aso:xxxxx@db:5984/aso | environment ASO_STATE | ASO_STATE",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0], `--lease-ttl "soon" (from config file `) || strings.Contains(r.stdout, "s3cret") {
		t.Errorf("errors %q, want the lease-ttl alone, and no secret shown", out.Errors)
	}
}
