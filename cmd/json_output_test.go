package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// decodeLines decodes JSON lines into maps, failing on any other output.
func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q (%v)\nall output:\n%s", line, err, out)
		}
		got = append(got, m)
	}
	return got
}

// TestJSONOutput: --json prints JSON lines and nothing else on stdout.
func TestJSONOutput(t *testing.T) {
	flag := newState(t)
	in := `{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/a", "destination_lfn": "/a", "size": 1}
{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/a", "destination_lfn": "/a", "size": 1}
{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/b", "size": 1}
`
	r := invocation{stdin: strings.NewReader(in)}.run(t, flag, "enqueue", "--json").wantCode(t, cmd.ExitUsage)
	got := decodeLines(t, r.stdout)
	if len(got) != 3 || got[0]["status"] != "stored" || got[1]["status"] != "already queued" || got[2]["status"] != "rejected" ||
		got[2]["line"] != 3.0 || !strings.Contains(got[2]["error"].(string), "destination_lfn") || len(got[0]["id"].(string)) != 64 {
		t.Fatalf("enqueue --json:\n%s", r.stdout)
	}
	r = invocation{stdin: strings.NewReader("[" + strings.ReplaceAll(strings.TrimSpace(in), "\n", ",") + "]")}.run(t, flag, "enqueue", "--json").wantCode(t, cmd.ExitUsage)
	if got := decodeLines(t, r.stdout); got[1]["element"] != 1.0 {
		t.Fatalf("enqueue --json of an array: %s", r.stdout)
	}

	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = aso(t, flag, "rm", "--json", "file://"+a, "file://"+filepath.Join(dir, "none")).wantCode(t, 0) // no transfer names them
	got = decodeLines(t, r.stdout)
	if len(got) != 2 || got[0]["url"] != "file://"+a || got[0]["status"] != "DELETED" || got[1]["status"] != "MISSING" {
		t.Fatalf("rm --json:\n%s", r.stdout)
	}

	r = aso(t, "resolve", "--json", "--sites", testSites, "T2_CH_CERN", "/store/data/x.root").wantCode(t, 0)
	got = decodeLines(t, r.stdout)
	if len(got) != 1 || got[0]["pfn"] != "root://eoscms.cern.ch//eos/cms/store/data/x.root" || got[0]["site"] != "T2_CH_CERN" {
		t.Fatalf("resolve --json:\n%s", r.stdout)
	}
}

// TestEnqueue_UnknownDependency: a record depending on no known transfer is
// stored, with a warning naming it.
func TestEnqueue_UnknownDependency(t *testing.T) {
	flag := newState(t)
	known := `{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/k", "destination_lfn": "/k", "size": 1}`
	invocation{stdin: strings.NewReader(known)}.run(t, flag, "enqueue").wantCode(t, 0)
	knownID := listIDs(t, flag, "--user", "alice", "list")[0]
	missing := strings.Repeat("ab", 32)
	in := `{"user": "alice", "source": "A", "destination": "B", "source_lfn": "/d", "destination_lfn": "/d", "size": 1, "depends_on": ["` + knownID + `", "` + missing + `"]}`
	r := invocation{stdin: strings.NewReader(in)}.run(t, flag, "enqueue").wantCode(t, 0)
	if strings.Count(r.stderr, "depends_on names no known transfer") != 1 || !strings.Contains(r.stderr, missing) || strings.Contains(r.stderr, knownID) {
		t.Fatalf("stderr %q: want one warning naming %s", r.stderr, missing)
	}
}
