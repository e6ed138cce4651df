package memfile

// The format of the state file (docs/design.md, the file store): its
// header, its records, and the encoding and decoding of documents.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The first line of a state file. A file of format 1 (before every
// document was in a checked record) is read, and rewritten in format 2 by
// the first handle that may write it.
const (
	fileHeader   = `{"aso_memfile":2}` + "\n"
	fileHeaderV1 = `{"aso_memfile":1}` + "\n"
)

var (
	batchPrefix = []byte(`{"batch":`)
	snapPrefix  = []byte(`{"snapshot":`)
	crcTable    = crc32.MakeTable(crc32.Castagnoli)
)

// header is the first line of a record: Docs document lines follow, Bytes
// long in total, whose CRC-32C is CRC. A journal record ("batch") holds
// the documents one call wrote; a compaction writes the current documents
// as snapshot records ("snapshot") at the start of a file. In format 2 the
// line ends with the CRC-32C of the line before it (hcrc), so that a
// header is checked before the length it gives is believed.
type header struct {
	snap        bool
	docs, bytes int
	crc         uint32
}

// maxHeader bounds the length of a header line.
const maxHeader = 128

// appendTo appends the header line of format 2 to b.
func (h header) appendTo(b []byte) []byte {
	start, key := len(b), batchPrefix
	if h.snap {
		key = snapPrefix
	}
	b = strconv.AppendInt(append(b, key...), int64(h.docs), 10)
	b = strconv.AppendInt(append(b, `,"bytes":`...), int64(h.bytes), 10)
	b = append(appendHex(append(b, `,"crc32c":"`...), h.crc), '"')
	return append(appendHex(append(b, `,"hcrc":"`...), crc32.Checksum(b[start:], crcTable)), `"}`+"\n"...)
}

// checks reports whether body, h.bytes long, is what h says: its
// CRC-32C, h.docs lines, the last one ending in a newline.
func (h header) checks(body []byte) bool {
	return len(body) > 0 && crc32.Checksum(body, crcTable) == h.crc && bytes.Count(body, []byte{'\n'}) == h.docs && body[len(body)-1] == '\n'
}

// appendHex appends v in 8 lower-case hexadecimal digits.
func appendHex(b []byte, v uint32) []byte {
	return hex.AppendEncode(b, binary.BigEndian.AppendUint32(nil, v))
}

// parseHeader parses line (with its newline) as a record header: exactly
// as the store writes one, its hcrc right in format 2.
func parseHeader(line []byte, v1 bool) (header, bool) {
	var h header
	rest, ok := bytes.CutPrefix(line, batchPrefix)
	if !ok && !v1 {
		rest, h.snap = bytes.CutPrefix(line, snapPrefix)
	}
	f := bytes.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ':' || r == '"' })
	if len(f) < 5 {
		return h, false
	}
	docs, err1 := strconv.Atoi(string(f[0]))
	n, err2 := strconv.Atoi(string(f[2]))
	crc, err3 := strconv.ParseUint(string(f[4]), 16, 32)
	h.docs, h.bytes, h.crc = docs, n, uint32(crc)
	if err1 != nil || err2 != nil || err3 != nil || h.docs < 1 || h.bytes < h.docs {
		return h, false
	}
	want := h.appendTo(nil)
	if v1 { // {"batch":N,"bytes":L,"crc32c":"X"}
		want = append(want[:bytes.Index(want, []byte(`,"hcrc"`))], `}`+"\n"...)
	}
	return h, bytes.Equal(line, want)
}

// encodeRecord encodes docs (transfers, locks, or lines kept as they are)
// as one record (a snapshot record if snap), into buf's memory, and
// returns it with the end of each document's line in it.
func encodeRecord(buf []byte, snap bool, docs []any) ([]byte, []int, error) {
	w := bytes.NewBuffer(append(buf[:0], make([]byte, maxHeader)...))
	enc := json.NewEncoder(w) // as json.Marshal, with a newline after each
	ends := make([]int, len(docs))
	for i, d := range docs {
		if raw, ok := d.([]byte); ok {
			w.Write(raw)
			w.WriteByte('\n')
		} else if err := enc.Encode(d); err != nil {
			return nil, nil, err
		}
		ends[i] = w.Len() - 1
	}
	b := w.Bytes()
	h := header{snap: snap, docs: len(docs), bytes: len(b) - maxHeader, crc: crc32.Checksum(b[maxHeader:], crcTable)}.appendTo(nil)
	at := maxHeader - len(h)
	copy(b[at:], h)
	for i := range ends {
		ends[i] -= at
	}
	return b[at:], ends, nil
}

// anyDoc decodes any stored document: a transfer or a run lock.
type anyDoc struct {
	state.Transfer
	Holder  string           `json:"holder"`
	Expire  state.Time       `json:"expire"`
	Since   state.Time       `json:"since"`
	LastRun *state.RunRecord `json:"last_run"`
}

func (d *anyDoc) lock() *state.LockDoc {
	return &state.LockDoc{ID: d.ID, Rev: d.Rev, Type: state.LockDocType, User: d.User, Holder: d.Holder, Expire: d.Expire, Since: d.Since, LastRun: d.LastRun}
}

// errNotDoc is wrapped by the error of a line that is not a document.
var errNotDoc = errors.New("not a document")

// decodeDoc decodes and validates one stored document into a zeroed d. A
// line that does not name itself is errNotDoc; any other error leaves
// d.ID set: the document is kept, skipped by every call and reported.
func decodeDoc(raw []byte, d *anyDoc) error {
	if err := json.Unmarshal(raw, d); err != nil {
		var id struct {
			ID string `json:"_id"`
		}
		if json.Unmarshal(raw, &id) != nil || id.ID == "" {
			return fmt.Errorf("%w: %v", errNotDoc, err)
		}
		*d = anyDoc{}
		d.ID = id.ID
		return fmt.Errorf("does not decode: %v", err)
	}
	switch {
	case d.ID == "":
		return fmt.Errorf("%w: no _id", errNotDoc)
	case d.Type != state.LockDocType:
		return d.Transfer.Validate()
	case d.User == "" || state.LockID(d.User) != d.ID:
		return fmt.Errorf("lock document %s: user %q does not match its _id", d.ID, d.User)
	}
	return nil
}

// written reports whether decoding enc, the encoding of t (encodeRecord),
// gives t back exactly: every string valid UTF-8 (the encoder writes an
// invalid byte as \ufffd, so a string that holds one, or that text, is
// not taken), every time as state.Time decodes one, no empty non-nil
// collection (omitted by the encoder, so read back as nil) and no Extra
// (not encoded). A written transfer that is not is decoded from enc, so
// that memory holds what a reader of the file reads. FuzzWritten holds it
// to the codec.
func written(t *state.Transfer, enc []byte) bool {
	if t.Extra != nil || (t.Checksums != nil && len(t.Checksums) == 0) ||
		(t.DependsOn != nil && len(t.DependsOn) == 0) || (t.History != nil && len(t.History) == 0) ||
		bytes.Contains(enc, []byte(`\ufffd`)) {
		return false
	}
	ok := decodedTime(t.LeaseExpires) && decodedTime(t.RetryAfter) && decodedTime(t.Created) && decodedTime(t.LastUpdate)
	for i := range t.History {
		ok = ok && decodedTime(t.History[i].At)
	}
	if t.Progress != nil {
		ok = ok && decodedTime(t.Progress.Updated)
	}
	return ok
}

// decodedTime reports whether t is a time as state.Time decodes one: the
// zero time.Time, or a time in UTC, of whole microseconds, without a
// monotonic clock reading, in the years 0000 to 9999.
func decodedTime(t state.Time) bool {
	if t.Time == (time.Time{}) {
		return true
	}
	return !t.IsZero() && t.Location() == time.UTC && t.Nanosecond()%1000 == 0 && t.Time == t.Round(0) &&
		!t.Before(firstDecoded) && t.Before(afterDecoded)
}

var firstDecoded, afterDecoded = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
