package memfile

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

// fileHeader is the first line of every state file.
const fileHeader = `{"aso_memfile":1}` + "\n"

var (
	batchPrefix = []byte(`{"batch":`)
	crcTable    = crc32.MakeTable(crc32.Castagnoli)
)

// batchHeader introduces a journal record: Docs document lines follow,
// Bytes long in total, with the CRC-32C of those bytes.
type batchHeader struct {
	Docs  int    `json:"batch"`
	Bytes int    `json:"bytes"`
	CRC   string `json:"crc32c"`
}

var (
	// errTorn marks a record cut short by a crash: dropped when it is the last.
	errTorn = errors.New("torn record")
	// errNoNewline marks a last document line without its newline: memfile
	// never writes one, so it was added by hand, and it is kept.
	errNoNewline = errors.New("last line without a newline")
)

// anyDoc decodes any stored document: a transfer or a run lock.
type anyDoc struct {
	state.Transfer
	Holder  string           `json:"holder"`
	Expire  state.Time       `json:"expire"`
	Since   state.Time       `json:"since"`
	LastRun *state.RunRecord `json:"last_run"`
}

// pending is a document line found by the scanner, decoded later.
type pending struct {
	off  int64 // file offset of the line
	n    int32 // length, without the newline
	line int32 // file line, from 1
	// replaced: a later line holds a newer version of the document
	replaced bool
}

// scanner reads the records of the file from a given offset, through a
// bounded buffer: a record is held in memory only while it is checked.
type scanner struct {
	path string
	r    *bufio.Reader
	pos  int64 // file offset of the next byte of r
	size int64 // file size
	line int   // lines read
	body []byte
	long []byte // a line longer than r's buffer
	// docs are the document lines of the records read; last locates the
	// last line of each document named canonically (see canonicalID).
	docs    []pending
	last    map[key]int
	lastAny map[string]int
}

func newScanner(f *os.File, path string, off, size int64, line int) *scanner {
	return &scanner{
		path: path, r: bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), int(min(256<<10, max(4096, size-off)))),
		pos: off, size: size, line: line, last: map[key]int{}, lastAny: map[string]int{},
	}
}

// ErrDamaged is wrapped by the error of a state file that cannot be read
// past some damage: a journal record that fails its checksum or has a bad
// header, a line that is not a document. Check lists the damage and
// Salvage writes what can be read into a new file.
var ErrDamaged = errors.New("the state file is damaged")

// errorf returns the error of damage at line (offset off) of the file.
func (sc *scanner) errorf(line int, off int64, format string, args ...any) error {
	return damagef(sc.path, line, off, format, args...)
}

func damagef(path string, line int, off int64, format string, args ...any) error {
	return fmt.Errorf("memfile: %s:%d (offset %d): %s: %w", path, line, off, fmt.Sprintf(format, args...), ErrDamaged)
}

// readLine returns the next line without its newline, or the bytes before
// the end of the file with io.EOF. The bytes are valid until the next read.
func (sc *scanner) readLine() ([]byte, error) {
	b, err := sc.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		sc.long = append(sc.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = sc.r.ReadSlice('\n')
			sc.long = append(sc.long, b...)
		}
		b = sc.long
	}
	if err != nil {
		return b, err
	}
	return b[:len(b)-1], nil
}

// add records a document line at off.
func (sc *scanner) add(raw []byte, off int64, line int) {
	i := len(sc.docs)
	sc.docs = append(sc.docs, pending{off: off, n: int32(len(raw)), line: int32(line)})
	id := lineID(raw)
	if id == nil {
		return
	}
	prev, seen := -1, false
	if k, ok := keyOf(id); ok {
		prev, seen = sc.last[k]
		sc.last[k] = i
	} else {
		prev, seen = sc.lastAny[string(id)]
		sc.lastAny[string(id)] = i
	}
	if seen {
		sc.docs[prev].replaced = true
	}
}

// record reads the record at sc.pos: a document line, or a journal record
// (checked whole before its documents are added). It returns errTorn for a
// last record that is incomplete or fails its checksum, and errNoNewline
// (after adding it) for a last document line without its newline.
func (sc *scanner) record() error {
	start, line := sc.pos, sc.line+1
	b, err := sc.readLine()
	switch {
	case err == io.EOF:
		if bytes.HasPrefix(b, batchPrefix) || bytes.HasPrefix(batchPrefix, b) || len(bytes.TrimSpace(b)) == 0 {
			return errTorn
		}
		sc.add(b, start, line)
		sc.pos += int64(len(b))
		sc.line++
		return errNoNewline
	case err != nil:
		return fmt.Errorf("memfile: read %s: %w", sc.path, err)
	}
	sc.pos += int64(len(b)) + 1
	sc.line++
	if !bytes.HasPrefix(b, batchPrefix) {
		if len(bytes.TrimSpace(b)) > 0 {
			sc.add(b, start, line)
		}
		return nil
	}
	var h batchHeader
	if err := json.Unmarshal(b, &h); err != nil || h.Docs < 0 || h.Bytes < 0 || len(h.CRC) != 8 {
		return sc.errorf(line, start, "bad journal record header %.80q", b)
	}
	if int64(h.Bytes) > sc.size-sc.pos {
		if recordFollows(sc.r) { // a torn record is the last thing in a file
			return sc.errorf(line, start, "journal record header says %d bytes, more than the rest of the file, yet records follow it: the header is damaged", h.Bytes)
		}
		return errTorn
	}
	if cap(sc.body) < h.Bytes {
		sc.body = make([]byte, h.Bytes)
	}
	body := sc.body[:h.Bytes]
	if _, err := io.ReadFull(sc.r, body); err != nil {
		return fmt.Errorf("memfile: read %s: %w", sc.path, err)
	}
	if fmt.Sprintf("%08x", crc32.Checksum(body, crcTable)) != h.CRC {
		if sc.pos+int64(h.Bytes) == sc.size {
			return errTorn
		}
		return sc.errorf(line, start, "journal record fails its checksum")
	}
	if bytes.Count(body, []byte{'\n'}) != h.Docs || (h.Docs > 0 && body[len(body)-1] != '\n') {
		return sc.errorf(line, start, "journal record holds a wrong number of documents (want %d)", h.Docs)
	}
	for at, k := 0, 0; at < len(body); k++ {
		nl := bytes.IndexByte(body[at:], '\n')
		sc.add(body[at:at+nl], sc.pos+int64(at), line+1+k)
		at += nl + 1
	}
	sc.pos += int64(h.Bytes)
	sc.line += h.Docs
	return nil
}

// recordFollows reports whether r holds the start of a journal record (a
// line beginning with its header), reading r to the end through a bounded
// buffer. Document lines cannot hold one: JSON escapes newlines.
func recordFollows(r io.Reader) bool {
	want := append([]byte{'\n'}, batchPrefix...)
	buf := make([]byte, 64<<10)
	keep := 0
	for {
		n, err := r.Read(buf[keep:])
		if bytes.Contains(buf[:keep+n], want) {
			return true
		}
		if err != nil {
			return false
		}
		if keep+n >= len(want) { // keep a tail that may start a header cut by the read
			copy(buf, buf[keep+n-len(want)+1:keep+n])
			keep = len(want) - 1
		} else {
			keep += n
		}
	}
}

var idPrefix = []byte(`{"_id":"`)

// lineID returns the ID of a document line: the _id that decoding it
// gives (decodeDoc), or nil when it names none. It alone decides under
// which ID the scanner files a line, so that a later version of a
// document replaces exactly the lines that decode as that document, and
// the documents fsck names. A line the store wrote is read without
// decoding it (canonicalID); any other is decoded, as encoding/json
// decodes it: a field's name matches regardless of case, and of keys that
// match, the last one counts. A line that is not JSON but starts as the
// store writes a line is named by that start, so that fsck can say which
// document a damaged line held.
func lineID(raw []byte) []byte {
	if id := canonicalID(raw); id != nil {
		return id
	}
	return decodedID(raw)
}

// decodedID returns the _id of a JSON document line as decodeJSON reads
// it, nil if it has none or is not JSON.
func decodedID(raw []byte) []byte {
	var d struct {
		ID string `json:"_id"`
	}
	if decodeJSON(raw, &d) != nil || d.ID == "" {
		return nil
	}
	return []byte(d.ID)
}

// canonicalID returns the ID of a line in the form the store writes: it
// starts with its _id, a string without escapes or control characters in
// valid UTF-8 (so decoded, it is the same bytes), and nothing after it
// can be another _id key (mayNameID). Any other line gives nil.
func canonicalID(raw []byte) []byte {
	if !bytes.HasPrefix(raw, idPrefix) {
		return nil
	}
	rest := raw[len(idPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil
	}
	id := rest[:end]
	for _, c := range id {
		if c < 0x20 || c == '\\' {
			return nil
		}
	}
	if !utf8.Valid(id) || mayNameID(rest[end+1:]) {
		return nil
	}
	return id
}

// mayNameID reports whether b may hold a key that encoding/json matches
// to the field "_id": a string "_id" in any case, or any \u escape of an
// ASCII letter or underscore (no other rune folds to one of "_id"'s). It
// errs on the side of yes: a value "_id" is enough.
func mayNameID(b []byte) bool {
	for rest := b; ; rest = rest[2:] {
		i := bytes.Index(rest, []byte(`"_`))
		if i < 0 || i+4 >= len(rest) {
			break
		}
		if rest = rest[i:]; rest[2]|0x20 == 'i' && rest[3]|0x20 == 'd' && rest[4] == '"' {
			return true
		}
	}
	for rest := b; ; rest = rest[4:] {
		i := bytes.Index(rest, []byte(`\u00`))
		if i < 0 || i+4 >= len(rest) {
			return false
		}
		if rest = rest[i:]; rest[4] >= '4' && rest[4] <= '7' {
			return true
		}
	}
}

// decodeAll reads back the document lines found by sc, in file order, and
// passes each to apply, except a line whose document a later line
// replaces (a journal holds many versions of a document; only the last
// one counts).
func decodeAll(src *source, docs []pending, apply applyFunc) error {
	var spans []span
	var at []int
	for i := range docs {
		if !docs[i].replaced {
			spans = append(spans, span{off: docs[i].off, n: int(docs[i].n)})
			at = append(at, i)
		}
	}
	var d anyDoc
	return src.readSpans(spans, func(i int, raw []byte) error {
		p := docs[at[i]]
		if err := decodeDoc(raw, &d); err != nil {
			if d.ID == "" {
				return damagef(src.path, int(p.line), p.off, "not a document: %v", err)
			}
			apply(d.ID, &d, raw, err.Error(), p.off)
			return nil
		}
		apply(d.ID, &d, raw, "", p.off)
		return nil
	})
}

// applyFunc receives each document read: its ID, decoded form, raw bytes
// (valid only during the call) at file offset off, and why it is invalid
// ("" if it is not).
type applyFunc func(id string, d *anyDoc, raw []byte, bad string, off int64)

// decodeDoc decodes and validates one stored document. On an error d.ID is
// set if the document at least names itself.
func decodeDoc(raw []byte, d *anyDoc) error {
	if err := decodeJSON(raw, d); err != nil {
		d.ID = string(decodedID(raw))
		return fmt.Errorf("does not decode: %v", err)
	}
	if d.ID == "" {
		return fmt.Errorf("document without _id")
	}
	if d.Type == state.LockDocType {
		if d.User == "" || state.LockID(d.User) != d.ID {
			return fmt.Errorf("lock document %s: user %q does not match its _id", d.ID, d.User)
		}
		return nil
	}
	if err := d.Transfer.Validate(); err != nil {
		return err
	}
	return nil
}

// decodeJSON decodes b into a zeroed *v as encoding/json does, through the
// implementation of encoding/json's API in the JSON v2 module, which reads
// documents a few times faster: reading them back is most of the store's
// work. A document it refuses is decoded again by encoding/json, whose
// errors name the field (the module's do not name a field of type
// state.Time). FuzzDecodeDoc holds the two to the same results.
func decodeJSON[T any](b []byte, v *T) error {
	*v = *new(T)
	if jsonv1.Unmarshal(b, v) == nil {
		return nil
	}
	*v = *new(T)
	return json.Unmarshal(b, v)
}

// headerRoom is the room left before the body of a record for its header.
const headerRoom = 96

// encodeBatch encodes docs (transfers and locks) as a journal record, one
// JSON line each, into buf, and returns it with where each document lies
// in it, and the buffer to reuse for the next record (rec is part of it).
func encodeBatch(buf []byte, docs []any) (rec []byte, spans []span, kept []byte, err error) {
	if want := headerRoom + 1280*len(docs); cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	w := bytes.NewBuffer(append(buf[:0], make([]byte, headerRoom)...))
	enc := json.NewEncoder(w) // as json.Marshal, with a newline after each
	spans = make([]span, len(docs))
	for i, d := range docs {
		start := w.Len()
		if err := enc.Encode(d); err != nil {
			return nil, nil, buf, err
		}
		spans[i] = span{off: int64(start), n: w.Len() - start - 1}
	}
	body := w.Bytes()
	h := fmt.Appendf(nil, `{"batch":%d,"bytes":%d,"crc32c":"%08x"}`+"\n", len(docs), len(body)-headerRoom, crc32.Checksum(body[headerRoom:], crcTable))
	at := headerRoom - len(h)
	copy(body[at:], h)
	for i := range spans {
		spans[i].off -= int64(at)
	}
	return body[at:], spans, body[:0], nil
}

// located is a document to copy into a snapshot: a transfer (slot >= 0)
// or an invalid document (id), at span from of the old file.
type located struct {
	slot int32
	id   string
	from span
	to   int64 // its offset in the snapshot
}

// writeSnapshot writes every document of d to a new file next to path,
// copying transfers and invalid documents from old (the current file), and
// returns it open, synced and flocked, not yet renamed, with where each
// document went.
func writeSnapshot(path string, d *db, old *os.File) (*os.File, int64, []located, error) {
	tmp := path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, 0, nil, err
	}
	fail := func(err error) (*os.File, int64, []located, error) {
		f.Close()
		os.Remove(tmp)
		return nil, 0, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fail(err)
	}
	docs := make([]located, 0, len(d.ids)+len(d.invalid))
	for _, i := range d.ids {
		docs = append(docs, located{slot: i, from: d.metas[i].at})
	}
	for id, bad := range d.invalid {
		docs = append(docs, located{slot: -1, id: id, from: bad.at})
	}
	slices.SortFunc(docs, func(a, b located) int { return cmp.Compare(a.from.off, b.from.off) }) // read old in order
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(fileHeader)
	off := int64(len(fileHeader))
	spans := make([]span, len(docs))
	for i := range docs {
		spans[i] = docs[i].from
	}
	src := &source{f: old, path: path}
	err = src.readSpans(spans, func(i int, b []byte) error {
		docs[i].to = off
		w.Write(b)
		off += int64(len(b)) + 1
		return w.WriteByte('\n')
	})
	if err != nil {
		return fail(err)
	}
	for _, l := range d.locks {
		b, err := json.Marshal(l)
		if err != nil {
			return fail(err)
		}
		w.Write(b)
		w.WriteByte('\n')
		off += int64(len(b)) + 1
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return f, off, docs, nil
}

// syncDir makes a rename or a creation in dir durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
