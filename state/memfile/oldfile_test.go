package memfile_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// testdata/handwritten.aso is a state file written by the hand-written
// codec memfile had up to commit 09b7d34 (a snapshot, journal records, a
// hand-added invalid line), and testdata/handwritten.json what that code
// read from it: every transfer, the summary, the locks and the fsck report.
// Both were made by -write-oldfile (writeOld) with that codec; run with the
// current code, it would check nothing of it.
var writeOldFile = flag.Bool("write-oldfile", false, "write testdata/handwritten.{aso,json} with the current code")

const (
	oldFile   = "testdata/handwritten.aso"
	oldGolden = "testdata/handwritten.json"
)

// oldClock is the clock of the file's writer and readers: every reading
// is a second and a half after the one before.
func oldClock() func() time.Time {
	t := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	return func() time.Time {
		t = t.Add(1500*time.Millisecond + 7*time.Microsecond)
		return t
	}
}

// oldReading is what a store and fsck read from a state file.
type oldReading struct {
	Transfers []state.Transfer `json:"transfers"`
	Summary   state.Summary    `json:"summary"`
	Locks     []state.LockDoc  `json:"locks"`
	Fsck      *memfile.Report  `json:"fsck"`
}

// readOld opens the file at path read-only with the fixed clock and reads
// it whole.
func readOld(t *testing.T, path string) oldReading {
	t.Helper()
	now := func() time.Time { return time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC) }
	s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "reader"}, Now: now}, memfile.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var r oldReading
	if r.Transfers, err = s.List(ctx, state.Filter{}); err != nil {
		t.Fatal(err)
	}
	if r.Summary, err = s.Summary(ctx, state.SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.Locks, err = s.Locks(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if r.Fsck, err = memfile.Check(path); err != nil {
		t.Fatal(err)
	}
	r.Fsck.Path = ""
	return r
}

// TestFileOfTheHandWrittenCodec: a file written by the hand-written codec
// reads as it did then (transfers field by field, summary, locks, fsck),
// takes new writes, and reads the same after a compaction.
func TestFileOfTheHandWrittenCodec(t *testing.T) {
	if *writeOldFile {
		writeOld(t)
	}
	path := filepath.Join(t.TempDir(), "state.aso")
	orig, err := os.ReadFile(oldFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(oldGolden)
	if err != nil {
		t.Fatal(err)
	}
	got := readOld(t, path)
	if len(got.Transfers) < 10 || got.Fsck.Invalid != 1 || got.Fsck.Damaged() || len(got.Locks) != 1 {
		t.Fatalf("the file reads as %d transfers, %d invalid, %d problems, %d locks", len(got.Transfers), got.Fsck.Invalid, len(got.Fsck.Problems), len(got.Locks))
	}
	if b := indented(t, got); !bytes.Equal(b, golden) {
		t.Fatalf("the file of the hand-written codec reads differently:\n%s\nwant\n%s", b, golden)
	}
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, err := statetest.Claim(ctx, s, 100)
	if err != nil || len(ts) == 0 {
		t.Fatalf("claims from the old file: %d, %v", len(ts), err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after := readOld(t, path)
	if after.Fsck.Damaged() || after.Fsck.Invalid != 1 || len(after.Transfers) != len(got.Transfers) {
		t.Fatalf("after a claim and a compaction: %d transfers, %d invalid, problems %v", len(after.Transfers), after.Fsck.Invalid, after.Fsck.Problems)
	}
}

func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// writeOld writes oldFile and oldGolden: transfers of two users through
// every state, with progress, escapes in strings, dependencies, a run lock
// with its last run, a compaction half-way and a hand-added invalid line.
func writeOld(t *testing.T) {
	os.Remove(oldFile)
	cfg := state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-a"}, Now: oldClock()}
	s, err := memfile.Open(oldFile, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []state.Request
	for i := range 10 {
		reqs = append(reqs, statetest.Req(statetest.Alice, i))
	}
	reqs[1].Priority, reqs[1].Activity, reqs[1].Role = 5, 3, "production"
	reqs[1].SourceLFN = "/store/temp/user/alice/<&> \"q\" \\ é \u2028 x.root"
	reqs[1].Checksums = map[string]string{"ADLER32": "0A0B0C0D"}
	reqs[2].DependsOn = []string{reqs[0].ID()}
	reqs = append(reqs, statetest.Req(statetest.Bob, 0), statetest.Req(statetest.Bob, 1))
	reqs[10].Source, reqs[10].Destination = statetest.Dst, statetest.Src
	res, err := s.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != state.Stored {
			t.Fatalf("enqueue %d: %s %v", i, r.Status, r.Err)
		}
	}
	claimed, err := statetest.Claim(ctx, s, 7)
	if err != nil || len(claimed) != 7 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	sub := claimed[:5]
	prep, err := statetest.Prepare(ctx, s, sub, "sid-0123456789abcdef")
	must(t, prep, err)
	var commits []state.Commit
	for i, tr := range sub {
		tr.Rev = prep[i].Rev
		commits = append(commits, state.Commit{Transfer: tr, SourcePFN: "davs://src.example.org" + tr.SourceLFN, DestPFN: "davs://dst.example.org" + tr.DestinationLFN, FileID: int64(100 + i)})
	}
	succeeds(t)(statetest.Commit(ctx, s, commits, "0b6e2b6c-3c5e-5e1e-9b8a-1d2c3e4f5a6b"))
	active, err := statetest.Active(ctx, s, statetest.Alice)
	if err != nil || len(active) != 1 || len(active[0].Transfers) != 5 {
		t.Fatalf("active: %v, %v", active, err)
	}
	sub = active[0].Transfers
	upd := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	succeeds(t)(s.SetTransientState(ctx, []state.Transient{
		{Transfer: sub[0], Progress: state.Progress{FTSState: "ACTIVE", Bytes: 512, Throughput: 12.25, Updated: state.At(upd)}},
		{Transfer: sub[1], Progress: state.Progress{FTSState: "SUBMITTED", Throughput: 1.5e-7, Retries: 1, Reason: "TRANSFER [110] timeout <retry>", FileID: 101, Updated: state.At(upd)}},
	}))
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, err := os.OpenFile(oldFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"_id":"hand-added","type":"transfer","size":"big"}` + "\n")
	f.Close()
	writeOldEnds(t, cfg, sub[0].ID, claimed[5:])
	if err := os.WriteFile(oldGolden, indented(t, readOld(t, oldFile)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeOldEnds ends the submitted transfers but the one with ID running
// (done, failed for good, failed to be retried, killed), aborts one of the
// claimed ones, asks to kill a queued one, and records a run under the run
// lock.
func writeOldEnds(t *testing.T, cfg state.Config, running string, claimed []state.Transfer) {
	s, err := memfile.Open(oldFile, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.AcquireLock(ctx, statetest.Alice, "host.example.org:4242", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	active, err := statetest.Active(ctx, s, statetest.Alice)
	if err != nil || len(active) != 1 {
		t.Fatalf("active: %v, %v", active, err)
	}
	job := active[0].ID
	var ts []state.Transfer
	for _, tr := range active[0].Transfers {
		if tr.ID != running {
			ts = append(ts, tr)
		}
	}
	if len(ts) != 4 {
		t.Fatalf("%d transfers to end", len(ts))
	}
	succeeds(t)(s.SetTerminalState(ctx, []state.Terminal{
		{Transfer: ts[0], Outcome: state.OutcomeDone, FTSJob: job},
		{Transfer: ts[1], Outcome: state.OutcomeFailed, Reason: "DESTINATION [17] File exists & \"differs\"", ErrorClass: "exists", FTSJob: job},
		{Transfer: ts[2], Outcome: state.OutcomeFailed, Reason: "TRANSFER [110] timeout", Retryable: true, ErrorClass: "timeout", FTSJob: job},
		{Transfer: ts[3], Outcome: state.OutcomeKilled, Reason: "cancelled", FTSJob: job},
	}))
	succeeds(t)(s.AbortTransfers(ctx, []state.Abort{{Transfer: claimed[0], Reason: "no route to the destination site", Fatal: true, ErrorClass: "configuration"}}))
	queued, err := s.List(ctx, state.Filter{User: statetest.Bob})
	if err != nil || len(queued) == 0 {
		t.Fatalf("bob's transfers: %d, %v", len(queued), err)
	}
	succeeds(t)(s.RequestKill(ctx, []string{queued[0].ID}))
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.ReleaseLock(ctx, l, &state.RunRecord{Holder: l.Holder, Started: state.At(started), Ended: state.At(started.Add(time.Minute)), ExitCode: 1, Error: "FTS <down>"}); err != nil {
		t.Fatal(err)
	}
}

// succeeds fails t unless a call and each of its results succeeded.
func succeeds(t testing.TB) func([]state.Result, error) {
	return func(res []state.Result, err error) {
		t.Helper()
		must(t, res, err)
	}
}
