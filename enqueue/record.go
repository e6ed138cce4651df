package enqueue

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/asyncstageout/aso/state"
)

// maxRecordBytes bounds one input record (a JSON line or an array element).
// The largest valid request (1000 dependencies, two 4096-byte LFNs) is about
// 80 KiB.
const maxRecordBytes = 1 << 20

// record is one request read from the input of `aso enqueue`, or the reason
// it could not be read.
type record struct {
	line  int // 1-based line where the record starts
	index int // 0-based element index in a JSON array; -1 for JSON lines
	req   state.Request
	err   error // why the record is rejected before the store sees it (req is unset when it could not be decoded)
}

// where names the record for an operator: its line, and its element index
// in an array input.
func (r *record) where() string {
	if r.index >= 0 {
		return fmt.Sprintf("element %d (line %d)", r.index, r.line)
	}
	return fmt.Sprintf("line %d", r.line)
}

// inputError is an input the reader cannot go on past (a JSON syntax error
// inside an array, a read error). Records before it were read.
type inputError struct {
	record // line and element index (-1: none) where the input broke
	err    error
	read   bool // the input could not be read (rather than parsed)
}

func (e *inputError) Error() string { return fmt.Sprintf("%s: %v", e.where(), e.err) }
func (e *inputError) Unwrap() error { return e.err }

// recordReader streams the records of a JSON array or of JSON lines, holding
// one record (and a read buffer) in memory at a time. next returns io.EOF at
// the end, or an *inputError.
type recordReader interface {
	next() (record, error)
}

// newRecordReader looks at the first non-space byte of r, without consuming
// anything but a UTF-8 byte order mark: '[' means a JSON array, anything
// else JSON lines.
func newRecordReader(r io.Reader) recordReader {
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	for i := 0; ; i++ {
		b, err := br.Peek(i + 1)
		if err != nil || !isSpace(b[i]) {
			if err == nil && b[i] == '[' {
				return newArrayReader(br)
			}
			// read errors, and the end of the input, come again from next
			return &linesReader{br: br}
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// linesReader reads JSON lines: one request object per line; blank lines are
// skipped.
type linesReader struct {
	br   *bufio.Reader
	line int
	buf  []byte // a line longer than the bufio buffer is assembled here
}

func (l *linesReader) next() (record, error) {
	for {
		b, tooLong, err := l.readLine()
		if err != nil && (err != io.EOF || len(b) == 0 && !tooLong) {
			if err == io.EOF {
				return record{}, io.EOF
			}
			return record{}, &inputError{record: record{line: l.line + 1, index: -1}, err: err, read: true}
		}
		l.line++
		rec := record{line: l.line, index: -1}
		b = bytes.TrimSpace(b)
		switch {
		case tooLong:
			rec.err = fmt.Errorf("longer than %d bytes", maxRecordBytes)
		case len(b) == 0:
			continue
		default:
			rec.req, rec.err = decodeRequest(b)
		}
		return rec, nil
	}
}

// readLine returns the next line without its newline. The slice is valid
// until the next call. A line longer than maxRecordBytes is skipped up to its
// end and reported with tooLong.
func (l *linesReader) readLine() (line []byte, tooLong bool, err error) {
	b, err := l.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return bytes.TrimSuffix(b, []byte{'\n'}), false, err
	}
	l.buf = append(l.buf[:0], b...)
	for err == bufio.ErrBufferFull {
		b, err = l.br.ReadSlice('\n')
		if !tooLong && len(l.buf)+len(b) > maxRecordBytes {
			tooLong, l.buf = true, l.buf[:0]
		}
		if !tooLong {
			l.buf = append(l.buf, b...)
		}
	}
	return bytes.TrimSuffix(l.buf, []byte{'\n'}), tooLong, err
}

// arrayReader reads the elements of one JSON array, one at a time.
type arrayReader struct {
	lc      *lineCounter
	dec     *json.Decoder
	index   int
	started bool
}

func newArrayReader(r io.Reader) *arrayReader {
	lc := &lineCounter{r: r}
	return &arrayReader{lc: lc, dec: json.NewDecoder(lc), index: -1}
}

func (a *arrayReader) next() (record, error) {
	if !a.started {
		a.started = true
		if _, err := a.dec.Token(); err != nil { // the '[' seen by newRecordReader
			return record{}, a.fail(err, false)
		}
	}
	if !a.dec.More() {
		return record{}, a.finish()
	}
	var raw json.RawMessage
	if err := a.dec.Decode(&raw); err != nil {
		return record{}, a.fail(err, true)
	}
	a.index++
	start := a.dec.InputOffset() - int64(len(raw))
	rec := record{line: a.lc.lineAt(start), index: a.index}
	if len(raw) > maxRecordBytes {
		rec.err = fmt.Errorf("longer than %d bytes", maxRecordBytes)
		return rec, nil
	}
	rec.req, rec.err = decodeRequest(raw)
	return rec, nil
}

// finish reads the closing ']' and checks that nothing but space follows.
func (a *arrayReader) finish() error {
	if _, err := a.dec.Token(); err != nil {
		return a.fail(err, false)
	}
	off := a.dec.InputOffset()
	if tok, err := a.dec.Token(); err != io.EOF {
		if err != nil {
			return a.fail(err, false)
		}
		return &inputError{record: record{line: a.lc.lineAt(off), index: -1}, err: fmt.Errorf("unexpected %v after the closing ] of the array", tok)}
	}
	return io.EOF
}

// fail turns a decoder error into an *inputError naming its line, and the
// element it broke when inElement.
func (a *arrayReader) fail(err error, inElement bool) error {
	ie := &inputError{record: record{index: -1}, err: err}
	if inElement {
		ie.index = a.index + 1
	}
	off := a.dec.InputOffset()
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = se.Offset
		ie.err = fmt.Errorf("JSON syntax error: %s; the rest of the input was not read", se.Error())
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		ie.err = errors.New("the input ends inside the JSON array (missing ])")
	default:
		ie.read = true
	}
	ie.line = a.lc.lineAt(off)
	return ie
}

// lineCounter passes reads through and remembers where the newlines are, so
// that the line of a byte offset can be found. Offsets asked for never
// decrease, so it forgets the newlines before the last offset asked: it holds
// only the newlines of the data the decoder has read ahead.
type lineCounter struct {
	r      io.Reader
	read   int64   // bytes read so far
	nl     []int64 // offsets of newlines at or after the last offset asked
	passed int     // newlines before the last offset asked
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		c.nl = append(c.nl, c.read+int64(i+j))
		i += j + 1
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the 1-based line of byte offset off.
func (c *lineCounter) lineAt(off int64) int {
	k := 0
	for k < len(c.nl) && c.nl[k] < off {
		k++
	}
	c.passed += k
	c.nl = c.nl[k:]
	return c.passed + 1
}

// decodeRequest decodes one JSON object into a request, rejecting unknown
// fields, trailing data, a key given twice and a missing size.
func decodeRequest(b []byte) (state.Request, error) {
	var r state.Request
	if len(b) == 0 || b[0] != '{' {
		return r, fmt.Errorf("not a JSON object: %s", clip(b))
	}
	if !utf8.Valid(b) {
		// encoding/json would store U+FFFD instead of the bad bytes: a
		// different file name than the one the user gave
		return r, fmt.Errorf("not valid UTF-8 at byte %d of the record", invalidUTF8At(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return state.Request{}, describeJSONError(err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		return state.Request{}, fmt.Errorf("unexpected %v after the JSON object (one request per line)", tokenText(tok, err))
	}
	if err := checkDuplicateKeys(b); err != nil {
		return state.Request{}, err
	}
	return r, nil
}

// invalidUTF8At returns the offset of the first byte of b that is not
// part of a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func tokenText(tok json.Token, err error) string {
	if err != nil {
		return "data"
	}
	return fmt.Sprintf("%q", fmt.Sprint(tok))
}

// describeJSONError rewords a decoding error so that it names the field and
// what was wrong with it.
func describeJSONError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("JSON syntax error at byte %d of the record: %s", se.Offset, se.Error())
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("field %s: got a JSON %s, want %s", te.Field, te.Value, kindName(te.Type))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("JSON syntax error: the record ends early")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}

// clip returns the start of an input record, quoted: a record is echoed
// to the operator's terminal, where its escape sequences must not act.
func clip(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "..."
	}
	return strconv.Quote(string(b))
}
