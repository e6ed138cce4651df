package srm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// FuzzInterpretRun checks that any gfal-rm output gives exactly one result
// per URL, settles at least one URL or reports an error (so the caller's
// loop ends), and gives every unsuccessful result an error.
func FuzzInterpretRun(f *testing.F) {
	f.Add("mock://h/a\tDELETED\nmock://h/b\tFAILED\n", "gfal-rm error: 13 (Permission denied) - Permission denied\n", 13, true)
	f.Add("mock://h/a\tMISSING\n", "gfal-rm error: 21 (Is a directory) - Can not remove mock://h/b, is a directory\n", 21, true)
	f.Add("", "usage: gfal-rm [-h]\n", 2, true)
	f.Add("mock://h/a\tFAILED: x\nmock://h/b\tDELETED\nmock://h/c\tMISSING\n", "", 2, true)
	f.Add("mock://h/a\tDELETED\n", "Command timed out after 1 seconds!\n", 110, false)
	f.Fuzz(func(t *testing.T, stdout, stderr string, exit int, started bool) {
		urls := []string{"mock://h/a", "mock://h/b", "mock://h/c"}
		got, settled, err := srm.InterpretRun(urls, srm.RunOutput{Stdout: stdout, Stderr: stderr, ExitCode: exit, Started: started})
		if len(got) != len(urls) {
			t.Fatalf("%d results for %d URLs", len(got), len(urls))
		}
		if settled < 0 || settled > len(urls) || err == nil && settled == 0 {
			t.Fatalf("settled %d, err %v", settled, err)
		}
		final := settled
		if err != nil {
			final = len(urls)
		}
		for i, r := range got[:final] {
			if r.URL != urls[i] {
				t.Fatalf("result %d for %q", i, r.URL)
			}
			switch r.Status {
			case srm.StatusDeleted, srm.StatusMissing:
				if r.Err != nil {
					t.Fatalf("%s with error %v", r.Status, r.Err)
				}
			case srm.StatusFailed, srm.StatusSkipped:
				if r.Err == nil {
					t.Fatalf("%s without error", r.Status)
				}
			default:
				t.Fatalf("result %d: status %q", i, r.Status)
			}
		}
	})
}

// FuzzStorageXML checks that loading any storage.xml does not panic, and
// that resolving any LFN against one that loads gives a PFN within bounds or
// a *ResolveError that carries a condition and names the site.
func FuzzStorageXML(f *testing.F) {
	f.Add(`<storage-mapping><lfn-to-pfn protocol="direct" path-match="/+store/(.*)" result="/d/store/$1"/>`+
		`<lfn-to-pfn protocol="davs" chain="direct" path-match="(.*)" result="davs://h$1"/></storage-mapping>`, "davs", "/store/user/a", "")
	f.Add(`<storage-mapping><lfn-to-pfn protocol="davs" destination-match="T1_.*" path-match="/(.*)" result="davs://i/$1"/>`+
		`<lfn-to-pfn protocol="davs" path-match="/(.*)" result="davs://e/$1"/></storage-mapping>`, "davs", "/store/x", "T1_A")
	f.Add(`<storage-mapping><lfn-to-pfn protocol="p" path-match="(a+)+$" result="$1$1"/></storage-mapping>`, "p", "aaaaaaaaaaaaaaaaaaaa!", "")
	f.Add(`<storage-mapping><lfn-to-pfn protocol="a" chain="b" path-match="(.*)" result="$1"/>`+
		`<lfn-to-pfn protocol="b" chain="a" path-match="(.*)" result="$1"/></storage-mapping>`, "a", "/x", "")
	f.Fuzz(func(t *testing.T, xml, protocol, lfn, dest string) {
		s, err := srm.SitesFromStorageXML([]byte(xml), protocol)
		if err != nil {
			return
		}
		pfn, err := s.ResolveFor("T", lfn, dest)
		if err != nil {
			var re *srm.ResolveError
			if !errors.As(err, &re) {
				t.Fatalf("error %T %v is not a *ResolveError", err, err)
			}
			if !errors.Is(err, srm.ErrNoMatch) && !errors.Is(err, srm.ErrBadLFN) && !errors.Is(err, srm.ErrBadCatalog) {
				t.Fatalf("error %v has no condition", err)
			}
			if !strings.Contains(err.Error(), "site T") {
				t.Fatalf("error %q does not name the site", err)
			}
			return
		}
		if len(pfn) > srm.MaxPFNLength {
			t.Fatalf("PFN of %d bytes", len(pfn))
		}
	})
}
