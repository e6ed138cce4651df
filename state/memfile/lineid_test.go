package memfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
	"github.com/asyncstageout/aso/state/statetest"
)

// twoIDs returns t's line edited by hand to name its _id twice: other's
// first, then t's in another case. encoding/json matches a field's name
// regardless of case and keeps the last value, so the line is t.
func twoIDs(tb *testing.T, t state.Transfer, other string) string {
	tb.Helper()
	line := docLine(tb, t)
	edited := strings.Replace(line, `{"_id":"`+t.ID+`"`, `{"_id":"`+other+`"`, 1)
	edited = strings.TrimSuffix(edited, "}\n") + `,"_ID":"` + t.ID + `"}` + "\n"
	if edited == line || !strings.HasPrefix(edited, `{"_id":"`+other+`"`) {
		tb.Fatalf("cannot edit %s", line)
	}
	return edited
}

// TestOpen_LineNamingTwoIDs: a line {"_id":"a",…,"_ID":"b"} is document b
// for the store and for fsck alike (encoding/json matches names
// regardless of case and keeps the last): versions of a before or after
// it neither hide b nor are hidden by it.
func TestOpen_LineNamingTwoIDs(t *testing.T) {
	now := statetest.Start
	a := state.NewTransfer(statetest.Req(statetest.Alice, 1), now, "hand")
	a.Rev = "1-a"
	a2 := a
	a2.Rev, a2.Priority = "2-a", 5
	b := state.NewTransfer(statetest.Req(statetest.Alice, 2), now, "hand")
	b.Rev = "1-b"
	x := twoIDs(t, b, a.ID)
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"a later version of a", []string{docLine(t, a), x, docLine(t, a2)}},
		{"the last record", []string{docLine(t, a), docLine(t, a2), x}},
		{"in one record", []string{docLine(t, a) + x + docLine(t, a2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			if err := os.WriteFile(path, stateFile(tc.lines...), 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := memfile.Check(path)
			if err != nil || rep.Damaged() || rep.Documents != 2 || rep.Invalid != 0 {
				t.Fatalf("fsck: %+v %v; want 2 valid documents", rep, err)
			}
			s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-a"}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, want := range []state.Transfer{a2, b} {
				got, err := s.Get(ctx, want.ID)
				if err != nil || got.Rev != want.Rev || got.Priority != want.Priority {
					t.Fatalf("Get %s: %s priority %d, %v; want %s priority %d", want.ID, got.Rev, got.Priority, err, want.Rev, want.Priority)
				}
			}
			if sum, err := s.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Total != 2 || len(sum.Invalid) != 0 {
				t.Fatalf("summary: %d transfers, invalid %+v, %v", sum.Total, sum.Invalid, err)
			}
		})
	}
	t.Run("in a damaged record", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.aso")
		bad := memfiletest.JournalRecord([]byte(x))
		at := strings.Index(string(bad), `"crc32c":"`) + len(`"crc32c":"`)
		bad[at] ^= 0x01 // another hex digit: the record fails its checksum
		data := append(append(stateFile(docLine(t, a)), bad...), memfiletest.JournalRecord([]byte(docLine(t, a2)))...)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := memfile.Check(path)
		if err != nil || len(rep.Problems) != 1 {
			t.Fatalf("fsck: %+v %v; want one problem", rep, err)
		}
		if got := rep.Problems[0].Dropped; !slices.Equal(got, []string{b.ID}) {
			t.Fatalf("fsck says the damaged record held %v, want %v", got, []string{b.ID})
		}
		if len(rep.Losses) != 1 || rep.Losses[0].ID != b.ID || rep.Losses[0].Line != 0 {
			t.Fatalf("losses %+v: want b lost, a kept", rep.Losses)
		}
		if _, err := memfile.Open(path, state.Config{}); !errors.Is(err, memfile.ErrDamaged) {
			t.Fatalf("open: %v", err)
		}
	})
}
