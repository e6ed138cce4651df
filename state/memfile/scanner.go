package memfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

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

// errorf returns the error of damage at line (offset off) of the file.
func (sc *scanner) errorf(line int, off int64, format string, args ...any) error {
	return damagef(sc.path, line, off, format, args...)
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
