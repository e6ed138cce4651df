package srm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

const tokenSites = `
T2_CH_CERN:
  protocol: davs
  tokens: true
  token-base: /eos/cms
  rules:
    - path-match: /+store/(.*)
      result: davs://eoscms.cern.ch:443/eos/cms/store/$1
T1_US_FNAL:
  protocol: davs
  tokens: true
  rules:
    - path-match: /+store/(.*)
      result: davs://cmsdcadisk.fnal.gov:2880/dcache/uscmsdisk/store/$1
T2_US_MIT:
  protocol: davs
  rules:
    - path-match: /+store/(.*)
      result: davs://se.mit.edu/store/$1
`

func TestSites_TokenScope(t *testing.T) {
	s, err := srm.ParseSites([]byte(tokenSites), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		site, lfn string
		write     bool
		want      string
		ok        bool
	}{
		{"T2_CH_CERN", "/store/user/alice/a/f.root", false, "storage.read:/store/user/alice/a", true},
		{"T2_CH_CERN", "/store/user/alice/a/f.root", true, "storage.modify:/store/user/alice/a", true},
		{"T1_US_FNAL", "/store/temp/user/x.root", false, "storage.read:/dcache/uscmsdisk/store/temp/user", true},
		{"T2_US_MIT", "/store/user/alice/f.root", true, "", false},
	} {
		pfn, err := s.ResolveFor(c.site, c.lfn, "")
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.TokenScope(c.site, pfn, c.write)
		if err != nil || got != c.want || ok != c.ok {
			t.Errorf("TokenScope(%s, %s, %v) = %q, %v, %v; want %q, %v", c.site, pfn, c.write, got, ok, err, c.want, c.ok)
		}
	}
	if _, ok, err := s.TokenScope("T2_CH_CERN", "davs://eoscms.cern.ch/eoscms/store/f", false); !ok || err == nil || !strings.Contains(err.Error(), "outside the token base /eos/cms") {
		t.Errorf("a PFN outside the token base: ok %v, err %v; want an error naming the base", ok, err)
	}
}

func TestSites_TokenConfigErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"X:\n  protocol: davs\n  token-base: /eos\n  rules: [{path-match: /(.*), result: davs://h/$1}]\n", "token-base is only meaningful with tokens: true"},
		{"X:\n  protocol: davs\n  tokens: true\n  token-base: eos/\n  rules: [{path-match: /(.*), result: davs://h/$1}]\n", `token-base "eos/"`},
		{"X:\n  protocol: davs\n  tokens: yes-please\n  rules: [{path-match: /(.*), result: davs://h/$1}]\n", "tokens"},
	} {
		_, err := srm.ParseSites([]byte(c.yaml), ".")
		if err == nil || !errors.Is(err, srm.ErrBadCatalog) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want ErrBadCatalog saying %q", c.yaml, err, c.want)
		}
	}
}
