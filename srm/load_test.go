package srm_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// writeFiles writes name -> content under a new temporary directory and
// returns it.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadSites_Errors(t *testing.T) {
	const goodXML = `<storage-mapping><lfn-to-pfn protocol="direct" path-match="/+(.*)" result="/d/$1"/></storage-mapping>`
	tests := []struct {
		name  string
		sites string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"bad regex", `S1: {protocol: p, rules: [{path-match: /ok/(.*), result: a/$1}, {path-match: "/store/(.*", result: "b/$1"}]}`,
			nil, []string{"site S1", "rule 2", `"/store/(.*"`, "missing closing )"}},
		{"Perl-only back reference", `S1: {protocol: p, rules: [{path-match: '/(a)\1', result: x}]}`,
			nil, []string{"site S1", "rule 1", "path-match"}},
		{"bad destination-match", `S1: {protocol: p, rules: [{path-match: /(.*), result: x/$1, destination-match: "T1_[*"}]}`,
			nil, []string{"site S1", "rule 1", "destination-match"}},
		{"unknown chain protocol", `S1: {protocol: davs, rules: [{path-match: /(.*), result: x/$1, chain: direct}]}`,
			nil, []string{"site S1", "rule 1", `chain names protocol "direct"`}},
		{"chain loop", `S1: {protocol: a, rules: [{protocol: a, path-match: (.*), result: $1, chain: b}, {protocol: b, path-match: (.*), result: $1, chain: a}]}`,
			nil, []string{"site S1", "rule 2", "chain loop a -> b -> a"}},
		{"chain to itself", `S1: {protocol: a, rules: [{path-match: (.*), result: $1, chain: a}]}`,
			nil, []string{"site S1", "rule 1", "chain loop a -> a"}},
		{"result group out of range", `S1: {protocol: p, rules: [{path-match: /(.*), result: x/$2}]}`,
			nil, []string{"site S1", "rule 1", "$2", "1 groups"}},
		{"missing result", `S1: {protocol: p, rules: [{path-match: /(.*)}]}`,
			nil, []string{"site S1", "rule 1", "missing result"}},
		{"preferred protocol without rules", `S1: {protocol: davs, rules: [{protocol: root, path-match: /(.*), result: x/$1}]}`,
			nil, []string{"site S1", `preferred protocol "davs" has no rules`, "root"}},
		{"missing protocol", `S1: {rules: [{path-match: /(.*), result: x/$1}]}`,
			nil, []string{"site S1", "missing protocol"}},
		{"two sources", `S1: {protocol: direct, rules: [{path-match: /(.*), result: x/$1}], storage-xml: s.xml}`,
			map[string]string{"s.xml": goodXML}, []string{"site S1", "exactly one of"}},
		{"misspelt key", `S1: {protocol: direct, storage_xml: s.xml}`,
			nil, []string{"storage_xml"}},
		{"no sites", ``, nil, []string{"no sites"}},
		{"missing catalogue", `S1: {protocol: direct, storage-xml: nothere.xml}`,
			nil, []string{"site S1", "nothere.xml"}},
		{"storage.xml bad regex", `S1: {protocol: direct, storage-xml: s.xml}`,
			map[string]string{"s.xml": "<storage-mapping>\n<lfn-to-pfn protocol=\"direct\" path-match=\"/+(.*)\" result=\"/d/$1\"/>\n<lfn-to-pfn protocol=\"direct\" path-match=\"[\" result=\"x\"/>\n</storage-mapping>"},
			[]string{"site S1", "s.xml line 3", `"["`}},
		{"storage.xml wrong root", `S1: {protocol: direct, storage-xml: s.xml}`,
			map[string]string{"s.xml": "<site-local-config/>"}, []string{"site S1", "want <storage-mapping>"}},
		{"storage.xml malformed", `S1: {protocol: direct, storage-xml: s.xml}`,
			map[string]string{"s.xml": "<storage-mapping><lfn-to-pfn"}, []string{"site S1", "s.xml"}},
		{"storage.json several volumes", `T1_DE_KIT: {protocol: WebDAV, storage-json: {{testdata}}/sites/T1_DE_KIT/storage.json}`,
			nil, []string{"site T1_DE_KIT", "KIT_MSS", "KIT_Disk", "set volume"}},
		{"storage.json unknown volume", `T1_DE_KIT: {protocol: WebDAV, storage-json: {{testdata}}/sites/T1_DE_KIT/storage.json, volume: KIT_Nope}`,
			nil, []string{"site T1_DE_KIT", `volume "KIT_Nope"`}},
		{"storage.json prefix and rules", `S1: {protocol: WebDAV, storage-json: s.json}`,
			map[string]string{"s.json": `[{"site": "S1", "volume": "V", "protocols": [{"protocol": "WebDAV", "prefix": "davs://h/p", "rules": [{"lfn": "/(.*)", "pfn": "x/$1"}]}]}]`},
			[]string{"site S1", "protocols[0]", "both prefix and rules"}},
		{"storage.json not an array", `S1: {protocol: WebDAV, storage-json: s.json}`,
			map[string]string{"s.json": `{"site": "S1"}`}, []string{"site S1", "JSON array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"sites.yaml": strings.ReplaceAll(tt.sites, "{{testdata}}", mustAbs(t, "../testdata"))}
			for k, v := range tt.files {
				files[k] = v
			}
			dir := writeFiles(t, files)
			_, err := srm.LoadSites(filepath.Join(dir, "sites.yaml"))
			if !errors.Is(err, srm.ErrBadCatalog) {
				t.Fatalf("LoadSites: %v, want ErrBadCatalog", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func mustAbs(t testing.TB, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLoadSites_RelativeAndAbsolutePaths(t *testing.T) {
	xml := `<storage-mapping><lfn-to-pfn protocol="direct" path-match="/+(.*)" result="/d/$1"/>` +
		`<lfn-to-pfn protocol="davs" chain="direct" path-match="(.*)" result="davs://h$1"/></storage-mapping>`
	dir := writeFiles(t, map[string]string{"cat/storage.xml": xml})
	abs := filepath.Join(dir, "cat/storage.xml")
	sitesDir := writeFiles(t, map[string]string{
		"conf/sites.yaml": "REL: {protocol: davs, storage-xml: ../cat/storage.xml}\nABS: {protocol: davs, storage-xml: " + abs + "}\n",
		"cat/storage.xml": xml,
	})
	s, err := srm.LoadSites(filepath.Join(sitesDir, "conf/sites.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, site := range []string{"REL", "ABS"} {
		if got, err := s.ResolveFor(site, "/store/a", ""); err != nil || got != "davs://h/d/store/a" {
			t.Errorf("Resolve(%s) = %q, %v", site, got, err)
		}
	}
}

func TestSites_Schemes(t *testing.T) {
	s, err := srm.LoadSites("../testdata/sites/sites.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.Schemes(), ",")
	// T2_US_Nebraska's davs rules chain to direct ones; the chained-to
	// protocol's results are not PFNs and add no scheme of their own.
	if want := "davs,file,root"; got != want {
		t.Fatalf("Schemes() = %s, want %s", got, want)
	}
}
