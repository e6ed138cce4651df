package srm_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/asyncstageout/aso/srm"
)

// checkResolve resolves lfn at every site of s and fails unless each gives
// a PFN within bounds or a *ResolveError that carries a condition and names
// the site.
func checkResolve(t *testing.T, s *srm.Sites, lfn string) {
	t.Helper()
	for _, site := range s.Names() {
		pfn, err := s.ResolveFor(site, lfn, "T1_Other")
		if err == nil {
			if len(pfn) > srm.MaxPFNLength {
				t.Fatalf("site %s: PFN of %d bytes", site, len(pfn))
			}
			continue
		}
		var re *srm.ResolveError
		if !errors.As(err, &re) {
			t.Fatalf("site %s: error %T %v is not a *ResolveError", site, err, err)
		}
		if !errors.Is(err, srm.ErrNoMatch) && !errors.Is(err, srm.ErrBadLFN) && !errors.Is(err, srm.ErrBadCatalog) {
			t.Fatalf("site %s: error %v has no condition", site, err)
		}
		if !strings.Contains(err.Error(), "site "+site) {
			t.Fatalf("error %q does not name site %s", err, site)
		}
	}
}

// FuzzSitesFile parses a sites file (YAML or JSON, inline rules; catalogue
// files are the business of FuzzStorageXML and FuzzStorageJSON) and
// resolves an LFN at each of its sites. Invariants: no panic; a file that
// is refused wraps ErrBadCatalog; a file that loads resolves any LFN to a
// bounded PFN or to an error naming the site and its condition.
func FuzzSitesFile(f *testing.F) {
	f.Add("T2_A:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file:///d/store/$1\n", "/store/a")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data, lfn string) {
		if strings.Contains(data, "storage-") {
			return // would read files named by the input
		}
		s, err := srm.ParseSites([]byte(data), dir)
		if err != nil {
			if !errors.Is(err, srm.ErrBadCatalog) {
				t.Fatalf("refusal %v does not wrap ErrBadCatalog", err)
			}
			return
		}
		checkResolve(t, s, lfn)
	})
}

// FuzzStorageJSON loads a SITECONF storage.json through a sites file that
// names it for site T with protocol, and resolves an LFN. Invariants as
// FuzzSitesFile; a refusal also names site T.
func FuzzStorageJSON(f *testing.F) {
	f.Add(`[{"site": "T", "volume": "V", "protocols": [{"protocol": "davs", "access": "global-rw", "prefix": "davs://h:2880/cms"}]}]`, "davs", "/store/a")
	f.Fuzz(func(t *testing.T, storage, protocol, lfn string) {
		if strings.ContainsFunc(protocol, unicode.IsControl) {
			// the sites file itself is then unreadable YAML, with no site to
			// name: FuzzSitesFile covers bad sites files
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "storage.json"), []byte(storage), 0o644); err != nil {
			t.Fatal(err)
		}
		sites, err := json.Marshal(map[string]any{"T": map[string]string{"protocol": protocol, "storage-json": "storage.json"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := srm.ParseSites(sites, dir)
		if err != nil {
			if !errors.Is(err, srm.ErrBadCatalog) || !strings.Contains(err.Error(), "site T") {
				t.Fatalf("refusal %q does not wrap ErrBadCatalog and name the site", err)
			}
			return
		}
		checkResolve(t, s, lfn)
	})
}
