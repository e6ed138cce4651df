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
	"path/filepath"

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

// errTorn marks a record cut short by a crash: dropped when it is the last.
var errTorn = errors.New("torn record")

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

// record parses the record at p.pos and applies its documents, returning
// the offset after it and the number of lines it spans. It returns errTorn
// for a record that is incomplete or fails its checksum.
func (p *parser) record(apply func(id string, d *anyDoc, raw []byte, bad string)) (int, int, error) {
	line, next, err := p.nextLine(p.pos)
	if err != nil {
		return 0, 0, err
	}
	if !bytes.HasPrefix(line, batchPrefix) {
		if len(bytes.TrimSpace(line)) == 0 {
			return next, 1, nil
		}
		return next, 1, p.doc(line, apply)
	}
	var h batchHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Docs < 0 || h.Bytes < 0 || len(h.CRC) != 8 {
		return 0, 0, p.errorf("bad journal record header %.80q", line)
	}
	end := next + h.Bytes
	if end > len(p.buf) {
		return 0, 0, errTorn
	}
	body := p.buf[next:end]
	if fmt.Sprintf("%08x", crc32.Checksum(body, crcTable)) != h.CRC {
		if end == len(p.buf) {
			return 0, 0, errTorn
		}
		return 0, 0, p.errorf("journal record fails its checksum")
	}
	if bytes.Count(body, []byte{'\n'}) != h.Docs || (h.Docs > 0 && body[len(body)-1] != '\n') {
		return 0, 0, p.errorf("journal record holds a wrong number of documents (want %d)", h.Docs)
	}
	// decode every document before applying any: a record applies whole
	type parsed struct {
		d   anyDoc
		raw []byte
		bad string
	}
	docs := make([]parsed, 0, h.Docs)
	for at := 0; at < len(body); {
		nl := bytes.IndexByte(body[at:], '\n')
		raw := body[at : at+nl]
		var pd parsed
		pd.raw = raw
		if err := decodeDoc(raw, &pd.d); err != nil {
			if pd.d.ID == "" {
				return 0, 0, p.errorf("document %d of the journal record: %v", len(docs)+1, err)
			}
			pd.bad = err.Error()
		}
		docs = append(docs, pd)
		at += nl + 1
	}
	for i := range docs {
		apply(docs[i].d.ID, &docs[i].d, docs[i].raw, docs[i].bad)
	}
	return end, 1 + h.Docs, nil
}

// doc parses one document line of the snapshot.
func (p *parser) doc(line []byte, apply func(id string, d *anyDoc, raw []byte, bad string)) error {
	var d anyDoc
	if err := decodeDoc(line, &d); err != nil {
		if d.ID == "" {
			return p.errorf("not a document: %v", err)
		}
		apply(d.ID, &d, line, err.Error())
		return nil
	}
	apply(d.ID, &d, line, "")
	return nil
}

// decodeDoc decodes and validates one stored document. On an error d.ID is
// set if the document at least names itself.
func decodeDoc(raw []byte, d *anyDoc) error {
	if err := json.Unmarshal(raw, d); err != nil {
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
	if d.Type == lockType {
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

// batchRecord returns the header of a journal record whose body (docs JSON
// lines) is body.
func batchRecord(docs int, body []byte) []byte {
	return fmt.Appendf(nil, `{"batch":%d,"bytes":%d,"crc32c":"%08x"}`+"\n", docs, len(body), crc32.Checksum(body, crcTable))
}

// writeSnapshot writes every document of d to a new file next to path and
// returns it open, synced, and flocked, not yet renamed.
func writeSnapshot(path string, d *db) (*os.File, int64, error) {
	tmp := path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*os.File, int64, error) {
		f.Close()
		os.Remove(tmp)
		return nil, 0, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fail(err)
	}
	// streamed through a buffer: the snapshot is never held in memory whole
	cw := &countingWriter{w: f}
	buf := bufio.NewWriterSize(cw, 1<<20)
	buf.WriteString(fileHeader)
	enc := json.NewEncoder(buf) // Encode ends each document with a newline
	for _, t := range d.docs {
		if err := enc.Encode(t); err != nil {
			return fail(err)
		}
	}
	for _, l := range d.locks {
		if err := enc.Encode(l); err != nil {
			return fail(err)
		}
	}
	for _, bad := range d.invalid {
		buf.Write(bad.raw)
		buf.WriteByte('\n')
	}
	if err := buf.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return f, cw.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
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
