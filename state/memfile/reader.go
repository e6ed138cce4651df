package memfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// reader reads the records of a state file, from an offset to the end,
// through a bounded buffer: a record is held in memory only while it is
// read. Each record is checked whole before its documents are given out.
type reader struct {
	f    io.ReaderAt
	path string
	v1   bool // format 1: a line that is not a record header is a document
	r    *bufio.Reader
	at   int64 // offset of the next record
	end  int64 // the file's size
	line int   // lines before at
	body []byte
}

// record is one record read: the offset and line of its header, and its
// document lines without their newlines (valid until the next read).
type record struct {
	at   int64
	line int
	snap bool // a snapshot record
	bare bool // a document line of format 1, without a header
	docs [][]byte
}

// damage is an error of a state file that cannot be read past a record:
// where, and what is wrong. It wraps ErrDamaged.
type damage struct {
	path string
	line int
	at   int64
	what string
	// next is where the next record starts when the damaged record's
	// header is sound (0: unknown), so that fsck can read on from there.
	next int64
}

func (d *damage) Error() string {
	return fmt.Sprintf("memfile: %s:%d (offset %d): %s: %v", d.path, d.line, d.at, d.what, ErrDamaged)
}

func (d *damage) Unwrap() error { return ErrDamaged }

// tornTail is what next returns for an incomplete last record, which a
// crash during its append leaves: from line and offset at to the end.
type tornTail struct {
	line     int
	at, size int64
}

func (t *tornTail) Error() string {
	return fmt.Sprintf("a torn last record (%d bytes), left by a crash during an append", t.size)
}

func newReader(f io.ReaderAt, path string, v1 bool, at, end int64, line int) *reader {
	rd := &reader{f: f, path: path, v1: v1, end: end}
	rd.seek(at, line)
	return rd
}

// seek makes the next record read the one at offset at, line line+1.
func (rd *reader) seek(at int64, line int) {
	rd.at, rd.line = at, line
	rd.r = bufio.NewReaderSize(io.NewSectionReader(rd.f, at, rd.end-at), 64<<10)
}

// next reads the next record: io.EOF at the end of the file, a *tornTail
// for an incomplete last record, a *damage for any other that does not
// check out. In a file of format 1 a line that is not a record header is
// a record of its own, without a check.
func (rd *reader) next() (record, error) {
	rec := record{at: rd.at, line: rd.line + 1}
	if rd.at >= rd.end {
		return rec, io.EOF
	}
	line, err := rd.readLine()
	switch {
	case err == io.EOF || errors.Is(err, bufio.ErrBufferFull):
		return rec, rd.fail(rec, "a line that is not a record", 0)
	case err != nil:
		return rec, fmt.Errorf("memfile: read %s: %w", rd.path, err)
	case rd.v1 && !bytes.HasPrefix(line, batchPrefix):
		rd.at, rd.line, rec.bare = rd.at+int64(len(line)), rd.line+1, true
		if len(bytes.TrimSpace(line)) > 0 {
			rec.docs = [][]byte{line[:len(line)-1]}
		}
		return rec, nil
	}
	h, ok := parseHeader(line, rd.v1)
	if !ok {
		return rec, rd.fail(rec, fmt.Sprintf("bad record header %.80q", line), 0)
	}
	kind, start := "journal record", rd.at+int64(len(line))
	if rec.snap = h.snap; h.snap {
		kind = "snapshot record"
	}
	if int64(h.bytes) > rd.end-start {
		return rec, rd.fail(rec, fmt.Sprintf("%s of %d bytes cut short at %d", kind, h.bytes, rd.end-start), 0)
	}
	if cap(rd.body) < h.bytes {
		rd.body = make([]byte, h.bytes)
	}
	body := rd.body[:h.bytes]
	if _, err := io.ReadFull(rd.r, body); err != nil {
		return rec, fmt.Errorf("memfile: read %s: %w", rd.path, err)
	}
	next := start + int64(h.bytes)
	if rd.v1 { // a header without a check of its own: its length may be wrong
		next = 0
	}
	if !h.checks(body) {
		return rec, rd.fail(rec, fmt.Sprintf("%s of %d documents fails its checksum", kind, h.docs), next)
	}
	for len(body) > 0 {
		nl := bytes.IndexByte(body, '\n')
		rec.docs = append(rec.docs, body[:nl])
		body = body[nl+1:]
	}
	rd.at, rd.line = start+int64(h.bytes), rd.line+1+h.docs
	return rec, nil
}

// readLine returns the next line with its newline: io.EOF without one. A
// line of format 2 longer than the buffer is no header: ErrBufferFull.
func (rd *reader) readLine() ([]byte, error) {
	b, err := rd.r.ReadSlice('\n')
	if !rd.v1 || !errors.Is(err, bufio.ErrBufferFull) {
		return b, err
	}
	long := bytes.Clone(b)
	for errors.Is(err, bufio.ErrBufferFull) {
		b, err = rd.r.ReadSlice('\n')
		long = append(long, b...)
	}
	return long, err
}

// fail returns the error of rec, which does not check out: a *tornTail
// if it is incomplete, else a *damage saying what. A tail that looks
// incomplete but holds a record that checks out is damage: an append
// never follows a torn one (the torn one is dropped first), so only
// damage puts a complete record there, and dropping the tail would drop
// it silently. That damage gives no next, so that fsck reads on from the
// record inside.
func (rd *reader) fail(rec record, what string, next int64) error {
	torn, err := rd.incomplete(rec.at)
	inner := int64(-1)
	if err == nil && torn {
		inner, err = rd.recordAfter(rec.at)
	}
	switch {
	case err != nil:
		return fmt.Errorf("memfile: read %s: %w", rd.path, err)
	case inner >= 0:
		what, next = fmt.Sprintf("%s, with a record that checks out after it, at offset %d", what, inner), 0
	case torn:
		return &tornTail{line: rec.line, at: rec.at, size: rd.end - rec.at}
	}
	return &damage{path: rd.path, line: rec.line, at: rec.at, what: what, next: next}
}

// recordAfter returns the offset of the first line after the one at at
// that starts a complete record that checks out (of either format), -1
// if there is none. It is called only for a tail that looks incomplete,
// whose bytes up to its last one that is not zero (no more than the
// record it starts claims, or a header) it reads into memory.
func (rd *reader) recordAfter(at int64) (int64, error) {
	z, err := rd.lastNonZero(at)
	if err != nil || z < at {
		return -1, err
	}
	tail := make([]byte, z+1-at)
	if _, err := rd.f.ReadAt(tail, at); err != nil {
		return -1, err
	}
	for p := bytes.IndexByte(tail, '\n') + 1; p > 0 && p < len(tail); {
		nl := bytes.IndexByte(tail[p:], '\n')
		if nl < 0 {
			break
		}
		line, body := tail[p:p+nl+1], tail[p+nl+1:]
		if bytes.HasPrefix(line, batchPrefix) || bytes.HasPrefix(line, snapPrefix) {
			h, ok := parseHeader(line, false)
			if !ok && rd.v1 {
				h, ok = parseHeader(line, true)
			}
			if ok && h.bytes <= len(body) && h.checks(body[:h.bytes]) {
				return at + int64(p), nil
			}
		}
		p += nl + 1
	}
	return -1, nil
}

// incomplete reports whether the bytes from at, where a record starts, to
// the end of the file are what an append cut short by a crash leaves
// (docs/guarantees.md): zeros; the start of a journal record's header
// line; a sound journal record header whose record runs past the end; or
// a journal record under a sound header whose last byte (a newline when
// written) is zero, with only zeros after it. Zeros are what a file
// extended before its data reached the disk reads as. Anything else is
// damage: a complete record that fails its checksum, a snapshot record
// cut short (a snapshot is written whole, and synced, before it replaces
// the file), and a tail holding a record that checks out (fail).
func (rd *reader) incomplete(at int64) (bool, error) {
	z, err := rd.lastNonZero(at)
	if err != nil || z < at {
		return z < at, err
	}
	b := make([]byte, min(z+1-at, maxHeader))
	if _, err := rd.f.ReadAt(b, at); err != nil {
		return false, err
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return z+1-at <= maxHeader && (bytes.HasPrefix(b, batchPrefix) || bytes.HasPrefix(batchPrefix, b)), nil
	}
	h, ok := parseHeader(b[:nl+1], rd.v1)
	end := at + int64(nl+1) + int64(h.bytes)
	return ok && !h.snap && (end > rd.end || z < end-1), nil
}

// lastNonZero returns the offset of the last byte of the file from at on
// that is not zero, at-1 if there is none.
func (rd *reader) lastNonZero(at int64) (int64, error) {
	buf := make([]byte, min(64<<10, rd.end-at))
	for end := rd.end; end > at; {
		n := min(int64(len(buf)), end-at)
		if _, err := rd.f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return end - n + i, nil
			}
		}
		end -= n
	}
	return at - 1, nil
}
