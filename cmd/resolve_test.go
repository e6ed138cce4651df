package cmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
)

const testSites = "../testdata/sites/sites.yaml"

// execAso runs aso with args and returns its exit code and output.
func execAso(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = cmd.ExecuteContext(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

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
			2, "", []string{"T2_XX_Nowhere", "T1_DE_KIT, T1_US_FNAL"}},
		{"no sites file", "", []string{"resolve", "T2_CH_CERN", "/store/x"},
			2, "", []string{"--sites", "ASO_SITES"}},
		{"bad sites file", "", []string{"resolve", "--sites", "../testdata/sites/T2_US_Nebraska/storage.xml", "T2_CH_CERN", "/store/x"},
			1, "", []string{"storage.xml"}},
		{"missing argument", testSites, []string{"resolve", "T2_CH_CERN"},
			2, "", []string{"accepts 2 arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ASO_SITES", tt.env)
			code, stdout, stderr := execAso(t, tt.args...)
			if code != tt.code || stdout != tt.stdout {
				t.Fatalf("exit %d, stdout %q; want %d, %q\nstderr: %s", code, stdout, tt.code, tt.stdout, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}
}
