package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
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
// record is damage, not a torn record (issue 43, case 3, where status
// showed 0 transfers and exited 0, enqueue cut the record away and fsck
// found nothing). Each command runs as the aso binary: status, list,
// enqueue, kill and run exit 78 naming the file and the record's line and
// offset and pointing to aso fsck, none writes to the file (the record
// stays), fsck exits 1 listing the damage, and fsck --repair writes what
// is readable into a new file.
func TestFsck_LastRecordDamaged(t *testing.T) {
	flag, path, b := enqueuedStore(t)
	last := strings.LastIndex(string(b), `{"batch":`)
	b[len(b)-40] ^= 0x04 // inside the last document of the last record
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(b[:last]), "\n") + 1
	where := fmt.Sprintf("%s:%d (offset %d)", path, line, last)
	sites, _, _ := localSites(t, 1)
	for _, args := range [][]string{{"status"}, {"list"}, {"enqueue"}, {"kill", "--all", "--yes"}, {"run", "--sites", sites, "--once", "--progress", "never"}} {
		r := process(t, extraRequests, append([]string{flag, "--user", "alice"}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{where, "fails its checksum", "aso fsck --state file:" + path} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
			t.Fatalf("%v wrote to the damaged store", args)
		}
	}
	r := process(t, "", flag, "fsck").wantCode(t, 1)
	r.wantStdout(t, fmt.Sprintf("line %d (offset %d): journal record of 3 documents fails its checksum; it is dropped", line, last))
	// the only record is the damaged one: the new file holds no transfer,
	// and says which were lost
	r = process(t, "", flag, "fsck", "--repair").wantCode(t, 0)
	r.wantStdout(t, "lost: ", "wrote 0 documents to "+path+".repaired")
	process(t, "", "--state=file:"+path+".repaired", "fsck").wantCode(t, 0).wantStdout(t, "0 documents readable")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("fsck --repair changed the damaged file")
	}
}

// enqueuedStore returns a new file store holding alice's three
// extraRequests, enqueued in one record, and the file's bytes.
func enqueuedStore(t *testing.T) (flag, path string, data []byte) {
	t.Helper()
	flag, path = stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return flag, path, data
}

// process runs the aso binary with args and stdin, in an environment of
// its own (a fresh HOME, no configuration file).
func process(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, proctest.Binary(t), args...)
	c.Env = []string{"HOME=" + t.TempDir(), "ASO_CONFIG=", "PATH=" + os.Getenv("PATH")}
	c.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("aso %v: %v", args, err)
	}
	return result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// TestFsck_PurgedSnapshotDamaged: the file a purge rewrites is checked
// like every record (issue 43, section 4: a changed size digit after a
// purge once passed status and fsck). One size digit changed in a
// transfer the purge kept: status and list, run as the aso binary, exit
// 78 naming the snapshot record and aso fsck, and fsck exits 1 listing
// the damage and the transfer it drops.
func TestFsck_PurgedSnapshotDamaged(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	aso(t, flag, "--user", "alice", "kill", "--all").wantCode(t, 0)
	invocation{stdin: strings.NewReader(`{"user": "bob", "source": "A", "destination": "B", "source_lfn": "/b", "destination_lfn": "/b", "size": 1234}`)}.
		run(t, flag, "enqueue").wantCode(t, 0)
	aso(t, flag, "--user", "alice", "purge", "--older-than", "1ns").wantCode(t, 0).wantStdout(t, "purged 3 terminal transfers of user alice")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), `"size":1234`) + len(`"size":12`)
	rec := strings.LastIndex(string(b[:at]), `{"snapshot":`)
	if rec < 0 || strings.Contains(string(b), `{"batch":`) {
		t.Fatalf("the purge did not rewrite the file as a snapshot:\n%s", b)
	}
	b[at] ^= 0x01 // 1234 becomes 1224
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s:%d (offset %d): snapshot record of 1 documents fails its checksum", path, strings.Count(string(b[:rec]), "\n")+1, rec)
	for _, args := range [][]string{{"status"}, {"list"}} {
		r := process(t, "", append([]string{flag, "--user", "bob"}, args...)...).wantCode(t, cmd.ExitConfig)
		for _, want := range []string{where, "aso fsck --state file:" + path} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
			}
		}
	}
	r := process(t, "", flag, "fsck").wantCode(t, 1)
	r.wantStdout(t, fmt.Sprintf("line %d (offset %d): snapshot record of 1 documents fails its checksum; it is dropped", strings.Count(string(b[:rec]), "\n")+1, rec), "lost: ")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("a command wrote to the damaged store")
	}
}

// TestTornTail_Commands: what a crash during an append leaves at the end
// of the file (docs/guarantees.md: a short tail, zeros, a record cut
// short then zeros) is not damage. Run as the aso binary, status reads
// the store without it and says so, naming the file and offset, and
// leaves the file as it is; the next enqueue drops it, saying so, and
// appends; fsck then finds the file sound.
func TestTornTail_Commands(t *testing.T) {
	flag, path, good := enqueuedStore(t)
	rec := good[strings.LastIndex(string(good), `{"batch":`):]
	for name, tail := range map[string][]byte{
		"a short tail":             rec[:len(rec)/2],
		"zeros":                    make([]byte, 4096-len(good)%4096),
		"cut short, then zeros":    append(bytes.Clone(rec[:len(rec)/2]), make([]byte, 4096)...),
		"the header's first bytes": rec[:5],
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, append(bytes.Clone(good), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("%s:%d (offset %d)", path, strings.Count(string(good), "\n")+1, len(good))
			r := process(t, "", flag, "--user", "alice", "status", "--json").wantCode(t, 0).wantStdout(t, `"total": 3,`)
			if !strings.Contains(r.stderr, where+": skipped a torn last record") {
				t.Errorf("status: stderr %q does not say it skipped the torn record at %s", r.stderr, where)
			}
			if after, _ := os.ReadFile(path); len(after) != len(good)+len(tail) {
				t.Fatalf("status changed the file from %d to %d bytes", len(good)+len(tail), len(after))
			}
			r = process(t, `{"user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/g", "destination_lfn": "/g", "size": 1}`, flag, "enqueue").wantCode(t, 0)
			if !strings.Contains(r.stderr, where+": dropped a torn last record") {
				t.Errorf("enqueue: stderr %q does not say it dropped the torn record at %s", r.stderr, where)
			}
			if after, _ := os.ReadFile(path); !bytes.HasPrefix(after, good) || bytes.Contains(after[len(good):], []byte{0}) {
				t.Fatal("enqueue did not append after the records that check out")
			}
			process(t, "", flag, "fsck").wantCode(t, 0).wantStdout(t, "4 documents readable (0 of them not valid transfers), 0 problems")
		})
	}
}
