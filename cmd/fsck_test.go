package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

func TestFsck(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	aso(t, flag, "fsck").wantCode(t, 0).wantStdout(t, "3 documents readable (0 of them not valid transfers), 0 problems")
	aso(t, flag, "--user", "alice", "kill", "--all").wantCode(t, 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.LastIndex(string(b), `{"batch":`)
	at := last + strings.Index(string(b[last:]), `"source":`) + 3 // a field's name in the kill record
	invocation{stdin: strings.NewReader(`{"user": "bob", "source": "A", "destination": "B", "source_lfn": "/b", "destination_lfn": "/b", "size": 1}`)}.
		run(t, flag, "enqueue").wantCode(t, 0)

	// flip one bit in the kill record (not the last): the store cannot be opened
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x02
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// every command refuses it, as needing a person, and says what to run
	sites, _, _ := localSites(t, 1)
	for _, args := range [][]string{{"status"}, {"enqueue"}, {"kill", "--all"}, {"init"}, {"run", "--sites", sites, "--once", "--progress", "never"}} {
		r := aso(t, append([]string{flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{"journal record of 3 documents fails its checksum", "aso fsck --state file:" + path, "aso fsck --repair"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v on a damaged store: stderr %q lacks %q", args, r.stderr, want)
			}
		}
	}
	r := aso(t, flag, "fsck").wantCode(t, 1)
	r.wantStdout(t, "journal record of 3 documents fails its checksum; it is dropped", "reverted: ")
	if !strings.Contains(r.stderr, "aso fsck --repair") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = aso(t, flag, "fsck", "--repair", "--json").wantCode(t, 0)
	var rep struct {
		Documents int    `json:"documents"`
		Repaired  string `json:"repaired"`
		Losses    []struct {
			ID   string `json:"id"`
			Line int    `json:"line"`
		} `json:"losses"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err, r.stdout)
	}
	if rep.Documents != 4 || rep.Repaired != path+".repaired" || len(rep.Losses) != 3 || rep.Losses[0].Line == 0 {
		t.Fatalf("repair report %+v", rep)
	}
	// the repaired file holds the transfers as before the lost kill
	ids := listIDs(t, "--state=file:"+rep.Repaired, "--user", "alice", "list", "--in-state", "new")
	if len(ids) != 3 {
		t.Fatalf("repaired store: %d new transfers, want 3", len(ids))
	}
	aso(t, "--state=couchdb://localhost:1/db", "fsck").wantCode(t, cmd.ExitUsage)
}

// TestFsck_LastRecordDamaged: one flipped byte inside the last complete
// record is damage, not a torn record (issue 43, case 3): status exits 78
// naming the file and the record's offset and pointing to aso fsck
// (instead of showing the store without it), enqueue refuses to write
// (the record stays), and fsck reports the damage.
func TestFsck_LastRecordDamaged(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := strings.LastIndex(string(b), `{"batch":`)
	b[len(b)-40] ^= 0x04 // inside the last document of the last record
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s:%d (offset %d)", path, strings.Count(string(b[:last]), "\n")+1, last)
	for _, args := range [][]string{{"status"}, {"list"}, {"enqueue"}} {
		r := invocation{stdin: strings.NewReader(extraRequests)}.run(t, append([]string{flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{where, "fails its checksum", "aso fsck --state file:" + path} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
			}
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("a command wrote to the damaged store")
	}
	r := aso(t, flag, "fsck").wantCode(t, 1)
	r.wantStdout(t, fmt.Sprintf("line %d (offset %d): journal record of 3 documents fails its checksum; it is dropped", strings.Count(string(b[:last]), "\n")+1, last))
}
