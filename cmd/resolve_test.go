package cmd_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

const testSites = "../testdata/sites/sites.yaml"

func TestResolve(t *testing.T) {
	tests := []struct {
		name   string
		env    string // ASO_SITES
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"chained storage.xml", "", []string{"resolve", "--sites", testSites, "T2_US_Nebraska", "/store/user/alice/f.root"},
			0, "davs://red-webdav.unl.edu:1094/mnt/hadoop/user/uscms01/pnfs/unl.edu/data4/cms/store/user/alice/f.root\n", nil},
		{"sites file from the environment", testSites, []string{"resolve", "T2_CH_CERN", "/store/data/x.root"},
			0, "root://eoscms.cern.ch//eos/cms/store/data/x.root\n", nil},
		{"destination", testSites, []string{"resolve", "--destination", "T1_US_FNAL_Tape", "T1_US_FNAL", "/store/mc/x.root"},
			0, "davs://cmsdcadisk-internal.fnal.gov:2880/dcache/uscmsdisk/store/mc/x.root\n", nil},
		{"no rule matches", testSites, []string{"resolve", "T2_CH_CERN", "/data/x.root"},
			1, "", []string{"T2_CH_CERN", "root", "/data/x.root", "no lfn-to-pfn rule matches"}},
		{"unknown site", testSites, []string{"resolve", "T2_XX_Nowhere", "/store/x"},
			cmd.ExitUsage, "", []string{"T2_XX_Nowhere", "T1_DE_KIT, T1_US_FNAL"}},
		{"no sites file", "", []string{"resolve", "T2_CH_CERN", "/store/x"},
			cmd.ExitUsage, "", []string{"--sites", "ASO_SITES"}},
		{"bad sites file", "", []string{"resolve", "--sites", "../testdata/sites/T2_US_Nebraska/storage.xml", "T2_CH_CERN", "/store/x"},
			1, "", []string{"storage.xml"}},
		{"missing argument", testSites, []string{"resolve", "T2_CH_CERN"},
			cmd.ExitUsage, "", []string{"accepts 2 arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := invocation{env: map[string]string{"ASO_SITES": tt.env}}.run(t, tt.args...).wantCode(t, tt.code)
			if r.stdout != tt.stdout {
				t.Fatalf("stdout %q, want %q\nstderr: %s", r.stdout, tt.stdout, r.stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
		})
	}
}
