package srm_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// catalogueSites loads a sites file naming the test catalogues.
func catalogueSites(t *testing.T) *srm.Sites {
	t.Helper()
	s, err := srm.ParseSites([]byte(`
T2_CH_CERN: {protocol: srmv2, storage-xml: T2_CH_CERN-storage.xml}
T3_CH_LATIN: {protocol: davs, storage-xml: latin1-storage.xml}
T2_XX_PHEDEX: {protocol: srmv2, storage-xml: phedex-storage.xml}
`), "testdata/catalogues")
	if err != nil {
		t.Fatalf("ParseSites: %v", err)
	}
	return s
}

// TestSites_DestinationMatchOfTheDestination: with CERN's catalogue, the
// rule chosen depends on the transfer's destination node, for either end.
func TestSites_DestinationMatchOfTheDestination(t *testing.T) {
	s := catalogueSites(t)
	const lfn = "/store/user/alice/out.root"
	tests := []struct {
		name, dest, want string
	}{
		{"CERN is the destination", "T2_CH_CERN", "srm://srm-eoscms.cern.ch:8443/srm/v2/server?SFN=/eos/cms/store/user/alice/out.root"},
		{"CERN is the source of a transfer to FNAL", "T1_US_FNAL", "srm://srm-cms.cern.ch:8443/srm/managerv2?SFN=/eos/cms/store/user/alice/out.root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ResolveFor("T2_CH_CERN", lfn, tc.dest)
			if err != nil || got != tc.want {
				t.Fatalf("ResolveFor(T2_CH_CERN, %s, %s) = %q, %v, want %q", lfn, tc.dest, got, err, tc.want)
			}
		})
	}
}

// TestSites_Latin1Catalogue: a storage.xml that declares ISO-8859-1 is
// read, its bytes as the characters they stand for.
func TestSites_Latin1Catalogue(t *testing.T) {
	s := catalogueSites(t)
	got, err := s.ResolveFor("T3_CH_LATIN", "/store/user/x.root", "")
	if want := "davs://se.example.ch:2880/dépôt/cms/store/user/x.root"; err != nil || got != want {
		t.Fatalf("Resolve = %q, %v, want %q", got, err, want)
	}
}

// TestSites_PhEDExWrappedCatalogue: a catalogue as the PhEDEx data
// service serves it, inside <phedex>, is read like a storage.xml.
func TestSites_PhEDExWrappedCatalogue(t *testing.T) {
	s := catalogueSites(t)
	got, err := s.ResolveFor("T2_XX_PHEDEX", "/store/mc/x.root", "T2_XX_PHEDEX")
	if want := "srm://srm.example.org:8443/srm/managerv2?SFN=/pnfs/example.org/data/cms/store/mc/x.root"; err != nil || got != want {
		t.Fatalf("ResolveFor = %q, %v, want %q", got, err, want)
	}
}

// TestSites_CatalogueFormErrors: what is still refused says why.
func TestSites_CatalogueFormErrors(t *testing.T) {
	tests := []struct{ name, xml, want string }{
		{"another root", `<catalog><lfn-to-pfn protocol="p" path-match="(.*)" result="$1"/></catalog>`, "root element is <catalog>"},
		{"phedex without a storage-mapping", `<phedex><node name="T2_XX_Y"/></phedex>`, "no <storage-mapping> element"},
		{"storage-mapping too deep", `<phedex><x><storage-mapping><lfn-to-pfn protocol="p" path-match="(.*)" result="$1"/></storage-mapping></x></phedex>`, "no <storage-mapping> element"},
		{"unknown encoding", `<?xml version="1.0" encoding="EBCDIC-US"?><storage-mapping/>`, `encoding "EBCDIC-US" is not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"s.xml": tc.xml})
			_, err := srm.ParseSites([]byte(`S1: {protocol: p, storage-xml: s.xml}`), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
