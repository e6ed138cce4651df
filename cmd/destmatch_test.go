package cmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRun_DestinationMatchOfTheDestination: the agent resolves both PFNs of
// a transfer with destination-match evaluated against the transfer's
// destination site, as PhEDEx does. With CERN's catalogue as destination,
// whose srmv2 rules differ only by destination-match, the destination PFN
// is CERN's EOS endpoint (srm-eoscms .../srm/v2/server), not the endpoint
// CERN serves to other destinations (srm-cms .../srm/managerv2).
func TestRun_DestinationMatchOfTheDestination(t *testing.T) {
	dir := t.TempDir()
	cern, err := filepath.Abs("../srm/testdata/catalogues/T2_CH_CERN-storage.xml")
	if err != nil {
		t.Fatal(err)
	}
	sites := filepath.Join(dir, "sites.yaml")
	body := fmt.Sprintf("T2_XX_A:\n  protocol: srmv2\n  rules:\n    - path-match: /store/(.*)\n      result: srm://se.a.example:8443/srm/managerv2?SFN=/data/store/$1\n"+
		"T2_CH_CERN:\n  protocol: srmv2\n  storage-xml: %s\n", cern)
	if err := os.WriteFile(sites, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"user": "bob", "source": "T2_XX_A", "destination": "T2_CH_CERN",
		"source_lfn": "/store/temp/user/bob/f.root", "destination_lfn": "/store/user/bob/f.root", "size": 10})
	requests := filepath.Join(dir, "requests.jsonl")
	if err := os.WriteFile(requests, append(req, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--dry-run").wantCode(t, 0).
		wantStdout(t, "job T2_XX_A -> T2_CH_CERN priority 0 (FTS priority 3): 1 files (e.g. srm://se.a.example:8443/srm/managerv2?SFN=/data/store/temp/user/bob/f.root -> "+
			"srm://srm-eoscms.cern.ch:8443/srm/v2/server?SFN=/eos/cms/store/user/bob/f.root)")
}
