// Package memfiletest is test support for the file store: it writes
// records as the store does, so that a test can put into a state file what
// the store's calls would refuse to write (a document that is not a valid
// transfer, say), the way a producer or an older aso could.
package memfiletest

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// JournalRecord wraps body (document lines) in a journal record header
// with the right length and CRC-32C, and the header's own CRC-32C, as the
// store writes it (docs/design.md, the file store).
func JournalRecord(body []byte) []byte {
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(bytes.Clone(body), '\n')
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	h := fmt.Sprintf(`{"batch":%d,"bytes":%d,"crc32c":"%08x"`, bytes.Count(body, []byte{'\n'}), len(body), crc32.Checksum(body, table))
	h += fmt.Sprintf(`,"hcrc":"%08x"}`+"\n", crc32.Checksum([]byte(h), table))
	return append([]byte(h), body...)
}

// AppendDocs appends docs (one JSON document each) to the state file at
// path as one well-formed journal record, under the file's lock as the
// store takes it.
func AppendDocs(t testing.TB, path string, docs ...string) {
	t.Helper()
	appendRecord(t, path, JournalRecord([]byte(strings.Join(docs, "\n"))))
}

// AppendDamaged appends docs as AppendDocs does, with one byte of the
// record's documents changed: a complete record whose checksum fails.
func AppendDamaged(t testing.TB, path string, docs ...string) {
	t.Helper()
	rec := JournalRecord([]byte(strings.Join(docs, "\n")))
	rec[len(rec)-2] ^= 0x04
	appendRecord(t, path, rec)
}

func appendRecord(t testing.TB, path string, rec []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck
	if _, err := f.Write(rec); err != nil {
		t.Fatal(err)
	}
}
