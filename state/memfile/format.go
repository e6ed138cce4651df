package memfile

// The format of the state file: its header, the journal record's header,
// a document line's ID, and the encoding and decoding of documents.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

	jsonv1 "github.com/go-json-experiment/json/v1"

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

// ErrDamaged is wrapped by the error of a state file that cannot be read
// past some damage: a journal record that fails its checksum or has a bad
// header, a line that is not a document. Check lists the damage and
// Salvage writes what can be read into a new file.
var ErrDamaged = errors.New("the state file is damaged")

// damagef returns the error of damage at line (offset off) of the file
// at path.
func damagef(path string, line int, off int64, format string, args ...any) error {
	return fmt.Errorf("memfile: %s:%d (offset %d): %s: %w", path, line, off, fmt.Sprintf(format, args...), ErrDamaged)
}

// idPrefix starts every document line the store writes.
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
