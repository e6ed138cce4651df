package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfig_Precedence is the one test of the order of the places a
// setting comes from: a flag on the command line, then the environment,
// then the configuration file (in each of its three formats), then the
// default. Each key stands for a type of setting; a layer's value differs
// from the layer below, so the winner shows.
func TestConfig_Precedence(t *testing.T) {
	type layers struct{ flag, env, file string } // as given; "" for the flag: none
	keys := []struct {
		command, name string
		given         layers
		fileValue     any    // in the file, as its format types it
		want          layers // fl.Value.String() of each
	}{
		{"run", "state", layers{"file:/f", "file:/e", "file:/c"}, "file:/c", layers{"file:/f", "file:/e", "file:/c"}},
		{"run", "sites", layers{"/f.json", "/e.json", "/c.json"}, "/c.json", layers{"/f.json", "/e.json", "/c.json"}},
		{"run", "batch-size", layers{"11", "12", ""}, 13, layers{"11", "12", "13"}},
		{"run", "interval", layers{"11s", "12s", ""}, "13s", layers{"11s", "12s", "13s"}},
		{"run", "sim-failure-rate", layers{"0.1", "0.2", ""}, 0.3, layers{"0.1", "0.2", "0.3"}},
		{"kill", "yes", layers{"true", "false", ""}, true, layers{"true", "false", "true"}},
		{"list", "in-state", layers{"new", "done,failed", ""}, []string{"killed", "acquired"}, layers{"[new]", "[done,failed]", "[killed,acquired]"}},
		{"run", "couchdb-timeout", layers{"", "12s", ""}, "13s", layers{"", "12s", "13s"}}, // no flag
	}
	formats := map[string]func(map[string]any) string{
		"yaml": func(m map[string]any) string { return lines(m, "%s: %s\n") },
		"toml": func(m map[string]any) string { return lines(m, "%s = %s\n") },
		"json": func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) },
	}
	for _, tc := range []struct {
		layer           string // the highest layer given
		format          string
		flag, env, file bool
	}{
		{layer: "default"},
		{layer: "file", format: "yaml", file: true},
		{layer: "file", format: "json", file: true},
		{layer: "file", format: "toml", file: true},
		{layer: "environment", format: "toml", file: true, env: true},
		{layer: "flag", format: "json", file: true, env: true, flag: true},
	} {
		t.Run(tc.layer+" "+tc.format, func(t *testing.T) {
			env, file := map[string]string{"ASO_CONFIG": ""}, map[string]any{}
			args := map[string][]string{}
			for _, k := range keys {
				if tc.file {
					file[k.name] = k.fileValue
				}
				if tc.env {
					env[envName(k.name)] = k.given.env
				}
				if tc.flag && k.given.flag != "" {
					args[k.command] = append(args[k.command], "--"+k.name+"="+k.given.flag)
				}
			}
			if tc.format != "" {
				path := filepath.Join(t.TempDir(), "aso."+tc.format)
				if err := os.WriteFile(path, []byte(formats[tc.format](file)), 0o600); err != nil {
					t.Fatal(err)
				}
				env["ASO_CONFIG"] = path
			}
			for _, k := range keys {
				g := &Globals{Stdout: io.Discard, Stderr: io.Discard, LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }}
				c, _, err := NewRootCommand(g).Find([]string{k.command})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.ParseFlags(args[k.command]); err != nil {
					t.Fatal(err)
				}
				if err := g.Load(c); err != nil {
					t.Fatalf("%s: %v", k.name, err)
				}
				fl := c.Flags().Lookup(k.name)
				want, wantFrom := "", fromDefault
				switch {
				case tc.flag && fl != nil:
					want, wantFrom = k.want.flag, fromFlag
				case tc.env:
					want, wantFrom = k.want.env, fromEnv
				case tc.file:
					want, wantFrom = k.want.file, fromFile
				}
				var got, from string
				if fl != nil {
					got, from = fl.Value.String(), g.sources[k.name]
					if want == "" {
						want = fl.DefValue
					}
				} else { // a setting with no flag
					got, _ = couchSetting(g, k.name)
					from, _ = g.conf.source(k.name, false)
					if want == "" {
						want = "30s"
					}
				}
				if !strings.HasPrefix(from, wantFrom) || got != want {
					t.Errorf("%s %s: %q from %q, want %q from %s", k.command, k.name, got, from, want, wantFrom)
				}
			}
		})
	}
}

// lines writes m as lines of key and JSON-encoded value in format, which
// is YAML's and TOML's form of a string, a number, a boolean and a list.
func lines(m map[string]any, format string) string {
	var b strings.Builder
	for k, v := range m {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, format, k, j)
	}
	return b.String()
}
