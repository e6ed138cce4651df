package srm_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/srm"
)

const sitesFile = "../testdata/sites/sites.yaml"

func loadTestSites(t testing.TB) *srm.Sites {
	t.Helper()
	s, err := srm.LoadSites(sitesFile)
	if err != nil {
		t.Fatalf("LoadSites(%s): %v", sitesFile, err)
	}
	return s
}

func TestSites_Resolve(t *testing.T) {
	s := loadTestSites(t)
	const (
		unl  = "davs://red-webdav.unl.edu:1094/mnt/hadoop/user/uscms01/pnfs/unl.edu/data4/cms"
		kit  = "davs://cmswebdav-kit.gridka.de:2880/pnfs/gridka.de/cms"
		fnal = "davs://cmsdcadisk.fnal.gov:2880"
	)
	tests := []struct {
		name, site, lfn, dest, want string
	}{
		{"storage.xml chain to direct", "T2_US_Nebraska", "/store/user/alice/out_1.root", "", unl + "/store/user/alice/out_1.root"},
		{"storage.xml chain, second direct rule", "T2_US_Nebraska", "/store/temp/user/alice.1234/x.root", "", unl + "/store/temp/user/alice.1234/x.root"},
		{"storage.xml chain, doubled slash", "T2_US_Nebraska", "//store/mc/RunIII/x.root", "", unl + "/store/mc/RunIII/x.root"},
		{"xrootd user rule first", "T2_CH_CERN", "/store/user/bob/f.root", "", "root://eosuser.cern.ch//eos/cms/store/user/bob/f.root"},
		{"xrootd general rule", "T2_CH_CERN", "/store/data/Run2024A/f.root", "", "root://eoscms.cern.ch//eos/cms/store/data/Run2024A/f.root"},
		{"destination rule skipped without destination", "T1_US_FNAL", "/store/mc/x.root", "", fnal + "/dcache/uscmsdisk/store/mc/x.root"},
		{"rule without destination-match", "T1_US_FNAL", "/store/user/c/x.root", "", "davs://cmseos-gridftp.fnal.gov:9000/eos/uscms/store/user/c/x.root"},
		{"destination-match selects internal door", "T1_US_FNAL", "/store/mc/x.root", "T1_US_FNAL_Tape", "davs://cmsdcadisk-internal.fnal.gov:2880/dcache/uscmsdisk/store/mc/x.root"},
		{"destination-match before user rule", "T1_US_FNAL", "/store/user/c/x.root", "T1_US_FNAL_Disk", "davs://cmsdcadisk-internal.fnal.gov:2880/eos/uscms/store/user/c/x.root"},
		{"destination-match must match whole name", "T1_US_FNAL", "/store/mc/x.root", "XT1_US_FNAL_Tape", fnal + "/dcache/uscmsdisk/store/mc/x.root"},
		{"storage.json rules chained", "T1_DE_KIT", "/store/user/d/y.root", "", kit + "/disk-only/store/user/d/y.root"},
		{"storage.json rules chained, general", "T1_DE_KIT", "/store/data/y.root", "", kit + "/store/data/y.root"},
		{"storage.json prefix", "T2_DE_DESY", "/store/user/e/z.root", "", "davs://dcache-cms-webdav-wan.desy.de:2880/pnfs/desy.de/cms/tier2/store/user/e/z.root"},
		{"file site", "T3_XX_Local", "/store/user/f/a b.root", "", "file:///var/tmp/aso-demo/T3_XX_Local/store/user/f/a b.root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ResolveFor(tt.site, tt.lfn, tt.dest)
			if err != nil {
				t.Fatalf("ResolveFor(%s, %s, %q): %v", tt.site, tt.lfn, tt.dest, err)
			}
			if got != tt.want {
				t.Fatalf("ResolveFor(%s, %s, %q) = %s, want %s", tt.site, tt.lfn, tt.dest, got, tt.want)
			}
			if tt.dest == "" {
				if got2, err := s.ResolveFor(tt.site, tt.lfn, ""); err != nil || got2 != got {
					t.Fatalf("Resolve = %q, %v; ResolveFor with no destination gave %q", got2, err, got)
				}
			}
		})
	}
}

func TestSites_ResolveErrors(t *testing.T) {
	s := loadTestSites(t)
	tests := []struct {
		name, site, lfn string
		want            error
		protocol        string
	}{
		{"unknown site", "T2_XX_Nowhere", "/store/user/a", srm.ErrUnknownSite, ""},
		{"no rule matches", "T2_CH_CERN", "/data/user/a", srm.ErrNoMatch, "root"},
		{"match is anchored", "T2_CH_CERN", "/foo/store/user/a", srm.ErrNoMatch, "root"},
		{"chain gives nothing", "T2_US_Nebraska", "/data/x", srm.ErrNoMatch, "davs"},
		{"empty LFN", "T2_CH_CERN", "", srm.ErrBadLFN, "root"},
		{"LFN with a newline", "T2_CH_CERN", "/store/user/a\n/store/user/b", srm.ErrBadLFN, "root"},
		{"LFN too long", "T2_CH_CERN", "/store/" + strings.Repeat("x", srm.MaxLFNLength), srm.ErrBadLFN, "root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pfn, err := s.ResolveFor(tt.site, tt.lfn, "")
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve(%s, %q) = %q, %v; want %v", tt.site, tt.lfn, pfn, err, tt.want)
			}
			var re *srm.ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *ResolveError", err)
			}
			if re.Site != tt.site || re.Protocol != tt.protocol || re.LFN != tt.lfn {
				t.Fatalf("ResolveError{Site: %q, Protocol: %q, LFN: %q}, want %q, %q, %q", re.Site, re.Protocol, re.LFN, tt.site, tt.protocol, tt.lfn)
			}
			msg := err.Error()
			for _, part := range []string{tt.site, tt.protocol, firstN(tt.lfn, 50)} {
				if !strings.Contains(msg, strings.ReplaceAll(part, "\n", `\n`)) {
					t.Errorf("error %q does not mention %q", msg, part)
				}
			}
		})
	}
}

func firstN(s string, n int) string { return s[:min(n, len(s))] }

func TestSites_Names(t *testing.T) {
	got := loadTestSites(t).Names()
	want := []string{"T1_DE_KIT", "T1_US_FNAL", "T2_CH_CERN", "T2_DE_DESY", "T2_US_Nebraska", "T3_XX_Local"}
	if !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

func TestParseSites_JSON(t *testing.T) {
	s, err := srm.ParseSites([]byte(`{"T3_A": {"protocol": "file", "rules": [{"path-match": "/store/(.*)", "result": "file:///d/$1"}]}}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ResolveFor("T3_A", "/store/x", ""); err != nil || got != "file:///d/x" {
		t.Fatalf("Resolve = %q, %v, want file:///d/x", got, err)
	}
}

// A regular expression that backtracking engines take exponential time on
// must be harmless: matching is linear and the LFN is bounded.
func TestSites_CatastrophicPattern(t *testing.T) {
	s, err := srm.ParseSites([]byte(`T: {protocol: p, rules: [{path-match: "(a+)+$", result: "x/$1"}]}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	lfn := strings.Repeat("a", srm.MaxLFNLength-1) + "!"
	start := time.Now()
	_, err = s.ResolveFor("T", lfn, "")
	if !errors.Is(err, srm.ErrNoMatch) {
		t.Fatalf("Resolve = %v, want ErrNoMatch", err)
	}
	// Backtracking would need about 2^4095 steps; linear matching is
	// microseconds. The bound only catches the former.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Resolve took %v", d)
	}
	if got, err := s.ResolveFor("T", "aaaa", ""); err != nil || got != "x/a" && got != "x/aaaa" {
		t.Fatalf("Resolve(aaaa) = %q, %v", got, err)
	}
}

func TestSites_WorkBound(t *testing.T) {
	// Each rule costs two evaluations (destination and path); the bound
	// is 2000 evaluations, far above what real catalogues need.
	rules := strings.Repeat(`{"path-match": "/nomatch/(.*)", "result": "x/$1"},`, 1000)
	s, err := srm.ParseSites([]byte(`{"T": {"protocol": "p", "rules": [`+rules+`{"path-match": "/(.*)", "result": "y/$1"}]}}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveFor("T", "/store/a", ""); !errors.Is(err, srm.ErrBadCatalog) || !strings.Contains(err.Error(), "rule evaluations") {
		t.Fatalf("Resolve = %v, want ErrBadCatalog for too much work", err)
	}
}

func TestSites_ResultTooLong(t *testing.T) {
	s, err := srm.ParseSites([]byte(`T: {protocol: p, rules: [{path-match: "(.*)", result: "$1$1$1$1$1$1$1$1$1"}]}`), "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveFor("T", "/"+strings.Repeat("x", 1000), ""); !errors.Is(err, srm.ErrBadCatalog) {
		t.Fatalf("Resolve = %v, want ErrBadCatalog", err)
	}
	if got, err := s.ResolveFor("T", "/a", ""); err != nil || got != strings.Repeat("/a", 9) {
		t.Fatalf("Resolve(/a) = %q, %v", got, err)
	}
}
