package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// TestCheckRunEnvironment_Plugins: every scheme of the sites file needs its
// gfal2 plugin; a missing one is named with its package.
func TestCheckRunEnvironment_Plugins(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "libgfal_plugin_file.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	saved := gfalPluginDirs
	gfalPluginDirs = []string{dir}
	t.Cleanup(func() { gfalPluginDirs = saved })
	ca := t.TempDir()
	if err := os.WriteFile(filepath.Join(ca, "5f2a1b3c.0"), []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Globals{LookupEnv: func(string) (string, bool) { return "", false }}
	davs := "A:\n  protocol: davs\n  rules:\n    - path-match: /(.*)\n      result: davs://h/$1\n"
	for _, tc := range []struct {
		name, sites string
		want, not   []string
		local       bool
	}{
		{"local simulator: a warning only", davs, nil, nil, true},
		{"file only", "A:\n  protocol: file\n  rules:\n    - path-match: /(.*)\n      result: file:///d/$1\n", nil, []string{"plugin"}, false},
		{"davs and root", "A:\n  protocol: davs\n  rules:\n    - path-match: /(.*)\n      result: davs://h/$1\nB:\n  protocol: root\n  rules:\n    - path-match: /(.*)\n      result: root://h//$1\n",
			[]string{"davs://", "apt-get install gfal2-plugin-http", "dnf install gfal2-plugin-http", "root://", "gfal2-plugin-xrootd"}, []string{"gfal2-plugin-file"}, false},
		{"unknown scheme", "A:\n  protocol: x\n  rules:\n    - path-match: /(.*)\n      result: weird://h/$1\n", []string{"no gfal2 plugin is known for weird://"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sites, err := srm.ParseSites([]byte(tc.sites), "")
			if err != nil {
				t.Fatal(err)
			}
			o := &RunOptions{GfalRm: "gfal-rm", Sites: "sites.yaml", FTS: FTSOptions{Endpoint: "https://fts.example:8446", TokenFile: tok, CertDir: ca}}
			if tc.local {
				o.FTS = FTSOptions{Endpoint: "local"}
			}
			err = checkRunEnvironment(o, g, sites)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if (len(tc.want) == 0) != (err == nil) {
				t.Fatalf("error %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(msg, n) {
					t.Errorf("error names %q: %s", n, msg)
				}
			}
		})
	}
}
