package memfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// journalRecord wraps body (document lines) in a journal record header
// with the right length and CRC-32C, as the store writes it.
func journalRecord(body []byte) []byte {
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(bytes.Clone(body), '\n')
	}
	sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	h := fmt.Sprintf(`{"batch":%d,"bytes":%d,"crc32c":"%08x"}`+"\n", bytes.Count(body, []byte{'\n'}), len(body), sum)
	return append([]byte(h), body...)
}

// FuzzStateFile opens a state file made of the header, snapshot lines and
// one well-formed journal record around journal, as memfile.Open reads
// it. Invariants: no panic; a file that is refused is refused with an
// error naming the file and the line; a file that opens lists every
// invalid document with its ID and a reason, and reads back the same after
// a reopen and after a compaction rewrote it (valid documents round-trip).
func FuzzStateFile(f *testing.F) {
	f.Add([]byte(`{"_id":"lock:alice","type":"lock","user":"alice","holder":"h","expire":null}`), []byte(`{"_id":"x","type":"transfer","size":"big"}`))
	lineRef := regexp.MustCompile(`\.aso:[1-9][0-9]*[ :]`)
	f.Fuzz(func(t *testing.T, snapshot, journal []byte) {
		path := filepath.Join(t.TempDir(), "s.aso")
		data := append([]byte(`{"aso_memfile":1}`+"\n"), snapshot...)
		if len(journal) > 0 {
			if len(snapshot) > 0 && snapshot[len(snapshot)-1] != '\n' {
				data = append(data, '\n')
			}
			data = append(data, journalRecord(journal)...)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		first, err := summaryOf(path, false)
		if err != nil {
			if !strings.Contains(err.Error(), path) || !lineRef.MatchString(err.Error()) {
				t.Fatalf("refusal %q does not name the file and line", err)
			}
			return
		}
		for _, d := range first.Invalid {
			if d.ID == "" || d.Reason == "" {
				t.Fatalf("invalid document listed without ID or reason: %+v", d)
			}
		}
		for _, step := range []struct {
			name    string
			compact bool
		}{{"reopen", false}, {"compaction", true}, {"reopen after compaction", false}} {
			again, err := summaryOf(path, step.compact)
			if err != nil {
				t.Fatalf("%s: a file that opened fails: %v", step.name, err)
			}
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(again)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s changed what the file holds:\n%s\n%s", step.name, a, b)
			}
		}
	})
}

// summaryOf opens the file, optionally compacts it, and returns the
// summary of every user.
func summaryOf(path string, compact bool) (state.Summary, error) {
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "alice", Owner: "fuzz"}, Now: now})
	if err != nil {
		return state.Summary{}, err
	}
	defer s.Close()
	if compact {
		if err := s.Compact(context.Background()); err != nil {
			return state.Summary{}, err
		}
	}
	return s.Summary(context.Background(), state.SummaryOptions{})
}
