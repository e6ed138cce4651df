package memfile

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"

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
	Holder string     `json:"holder"`
	Expire state.Time `json:"expire"`
}

// parser reads the records of buf, which starts at file offset base, line
// line+1 of the file.
type parser struct {
	path string
	buf  []byte
	base int64
	line int
	pos  int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("memfile: %s:%d (offset %d): %s", p.path, p.line+1, p.base+int64(p.pos), fmt.Sprintf(format, args...))
}

// nextLine returns the next full line (without its newline), or errTorn if
// the buffer ends inside it.
func (p *parser) nextLine(at int) ([]byte, int, error) {
	nl := bytes.IndexByte(p.buf[at:], '\n')
	if nl < 0 {
		return nil, 0, errTorn
	}
	return p.buf[at : at+nl], at + nl + 1, nil
}

// pending is a document line found by the parser, decoded later.
type pending struct {
	raw  []byte
	off  int64 // file offset of raw
	line int   // file line of raw, from 1
}

// record parses the framing of the record at p.pos, returning the offset
// after it, the number of lines it spans and its document lines. It returns
// errTorn for a record that is incomplete or fails its checksum.
func (p *parser) record() (int, int, []pending, error) {
	line, next, err := p.nextLine(p.pos)
	if err != nil {
		rest := p.buf[p.pos:]
		if bytes.HasPrefix(rest, batchPrefix) || bytes.HasPrefix(batchPrefix, rest) || len(bytes.TrimSpace(rest)) == 0 {
			return 0, 0, nil, err
		}
		return len(p.buf), 1, []pending{{raw: rest, off: p.base + int64(p.pos), line: p.line + 1}}, errNoNewline
	}
	if !bytes.HasPrefix(line, batchPrefix) {
		if len(bytes.TrimSpace(line)) == 0 {
			return next, 1, nil, nil
		}
		return next, 1, []pending{{raw: line, off: p.base + int64(p.pos), line: p.line + 1}}, nil
	}
	var h batchHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Docs < 0 || h.Bytes < 0 || len(h.CRC) != 8 {
		return 0, 0, nil, p.errorf("bad journal record header %.80q", line)
	}
	end := next + h.Bytes
	if end > len(p.buf) {
		return 0, 0, nil, errTorn
	}
	body := p.buf[next:end]
	if fmt.Sprintf("%08x", crc32.Checksum(body, crcTable)) != h.CRC {
		if end == len(p.buf) {
			return 0, 0, nil, errTorn
		}
		return 0, 0, nil, p.errorf("journal record fails its checksum")
	}
	if bytes.Count(body, []byte{'\n'}) != h.Docs || (h.Docs > 0 && body[len(body)-1] != '\n') {
		return 0, 0, nil, p.errorf("journal record holds a wrong number of documents (want %d)", h.Docs)
	}
	docs := make([]pending, 0, h.Docs)
	for at := 0; at < len(body); {
		nl := bytes.IndexByte(body[at:], '\n')
		docs = append(docs, pending{raw: body[at : at+nl], off: p.base + int64(next+at), line: p.line + 2 + len(docs)})
		at += nl + 1
	}
	return end, 1 + h.Docs, docs, nil
}

var idPrefix = []byte(`{"_id":"`)

// canonicalID returns the ID of a document line written by memfile (it
// starts with its _id), or "" for any other line.
func canonicalID(raw []byte) string {
	if !bytes.HasPrefix(raw, idPrefix) {
		return ""
	}
	rest := raw[len(idPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return ""
	}
	return string(rest[:end])
}

// decodeAll decodes the document lines in file order and passes each to
// apply, except a line whose document a later line replaces (a journal
// holds many versions of a document; only the last one counts).
func decodeAll(path string, docs []pending, apply applyFunc) error {
	ids := make([]string, len(docs))
	last := make(map[string]int, len(docs))
	for i := range docs {
		if id := canonicalID(docs[i].raw); id != "" {
			ids[i] = id
			last[id] = i
		}
	}
	in := newInterner()
	for i := range docs {
		if ids[i] != "" && last[ids[i]] != i {
			continue
		}
		var d anyDoc
		if err := decodeDoc(docs[i].raw, &d, in); err != nil {
			if d.ID == "" {
				return fmt.Errorf("memfile: %s:%d (offset %d): not a document: %v", path, docs[i].line, docs[i].off, err)
			}
			apply(d.ID, &d, docs[i].raw, err.Error(), docs[i].off)
			continue
		}
		apply(d.ID, &d, docs[i].raw, "", docs[i].off)
	}
	return nil
}

// applyFunc receives each document read: its ID, decoded form, raw bytes
// at file offset off, and why it is invalid ("" if it is not).
type applyFunc func(id string, d *anyDoc, raw []byte, bad string, off int64)

// decodeDoc decodes and validates one stored document. On an error d.ID is
// set if the document at least names itself.
func decodeDoc(raw []byte, d *anyDoc, in *interner) error {
	if fastCodec && decodeTransfer(raw, &d.Transfer, in) {
		d.Holder, d.Expire = "", state.Time{}
	} else if err := json.Unmarshal(raw, d); err != nil {
		var id struct {
			ID string `json:"_id"`
		}
		if json.Unmarshal(raw, &id) == nil {
			d.ID = id.ID
		} else {
			d.ID = ""
		}
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

// encodeBatch returns a journal record holding docs (transfers and locks),
// one JSON line each, and where each document lies in it.
func encodeBatch(docs []any) ([]byte, []span, error) {
	body := make([]byte, 0, 1024*len(docs))
	spans := make([]span, len(docs))
	for i, d := range docs {
		start := len(body)
		var err error
		if t, ok := d.(*state.Transfer); ok && fastCodec {
			body, err = appendTransfer(body, t)
		} else {
			var b []byte
			b, err = json.Marshal(d)
			body = append(body, b...)
		}
		if err != nil {
			return nil, nil, err
		}
		spans[i] = span{off: int64(start), n: len(body) - start}
		body = append(body, '\n')
	}
	h := fmt.Sprintf(`{"batch":%d,"bytes":%d,"crc32c":"%08x"}`+"\n", len(docs), len(body), crc32.Checksum(body, crcTable))
	for i := range spans {
		spans[i].off += int64(len(h))
	}
	return append([]byte(h), body...), spans, nil
}

// writeSnapshot writes every document of d to a new file next to path,
// copying transfers and invalid documents from old (the current file), and
// returns it open, synced and flocked, not yet renamed, with the new spans.
func writeSnapshot(path string, d *db, old []byte) (*os.File, int64, map[string]span, error) {
	tmp := path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, 0, nil, err
	}
	fail := func(err error) (*os.File, int64, map[string]span, error) {
		f.Close()
		os.Remove(tmp)
		return nil, 0, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fail(err)
	}
	type located struct {
		id string
		sp span
	}
	docs := make([]located, 0, len(d.at))
	for id, sp := range d.at {
		docs = append(docs, located{id, sp})
	}
	slices.SortFunc(docs, func(a, b located) int { return cmp.Compare(a.sp.off, b.sp.off) }) // read old in order
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(fileHeader)
	off := int64(len(fileHeader))
	at := make(map[string]span, len(docs))
	for _, doc := range docs {
		id, sp := doc.id, doc.sp
		if sp.off < 0 || sp.off+int64(sp.n) > int64(len(old)) {
			return fail(fmt.Errorf("document %s: span %+v outside the file of %d bytes", id, sp, len(old)))
		}
		w.Write(old[sp.off : sp.off+int64(sp.n)])
		w.WriteByte('\n')
		at[id] = span{off: off, n: sp.n}
		off += int64(sp.n) + 1
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
	return f, off, at, nil
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
