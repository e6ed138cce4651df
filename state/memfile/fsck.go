package memfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Problem is one piece of damage Check found: where, what, and the IDs of
// the document versions it makes unreadable.
type Problem struct {
	Line   int    `json:"line"`   // line of the file, from 1
	Offset int64  `json:"offset"` // byte offset of that line
	What   string `json:"what"`   // what is wrong
	// Dropped names the documents whose versions there are lost.
	Dropped []string `json:"dropped,omitempty"`
}

// Loss is what salvaging does to one document a Problem dropped.
type Loss struct {
	ID string `json:"id"`
	// Line is the line of the version that survives (0: none does, the
	// document is lost).
	Line int `json:"line"`
}

// Report is the result of Check.
type Report struct {
	Path      string    `json:"path"`
	Documents int       `json:"documents"` // documents that survive: transfers, locks and invalid ones
	Invalid   int       `json:"invalid"`   // of which documents kept but skipped by every call (see Summary)
	Problems  []Problem `json:"problems"`
	// Losses lists, for each document whose last version was dropped, the
	// version that survives: a salvaged file holds that older version (for
	// a transfer, possibly an earlier state) or nothing.
	Losses []Loss `json:"losses"`
	// TornTail is a record cut short at the end of the file, which a store
	// drops on open: a crash while appending, not damage.
	TornTail *Problem `json:"torn_tail,omitempty"`
}

// Damaged reports whether r found damage a store cannot open past.
func (r *Report) Damaged() bool { return len(r.Problems) > 0 }

// fsckDoc is where the surviving version of a document lies.
type fsckDoc struct {
	at   span
	line int
	seq  int // order of the version in the file
}

// fsck is the state of one Check: the scan and what it found.
type fsck struct {
	path    string
	r       *bufio.Reader
	off     int64
	line    int
	back    []fsckLine // lines read ahead, to be read again
	docs    map[string]fsckDoc
	dropped map[string]int // ID -> seq of its last dropped version
	seq     int
	rep     *Report
}

type fsckLine struct {
	b    []byte // with its newline, if it had one
	off  int64
	line int
	// reported: the line belongs to a damaged record already reported
	reported bool
}

// Check reads the state file at path to the end, past any damage, and
// reports every problem and what survives. It takes the file's lock while
// it reads, so a running agent waits (at most the time of the read).
func Check(path string) (*Report, error) {
	rep, _, err := check(path)
	return rep, err
}

func check(path string) (*Report, *fsck, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("memfile: fsck %s: %w", path, ErrNoStore)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memfile: fsck: %w", err)
	}
	defer f.Close()
	if err := flockTimeout(f, 30*time.Second); err != nil {
		return nil, nil, fmt.Errorf("memfile: fsck %s: %w", path, err)
	}
	c := &fsck{path: path, r: bufio.NewReaderSize(f, 1<<20), docs: map[string]fsckDoc{}, dropped: map[string]int{}, rep: &Report{Path: path}}
	if err := c.scan(); err != nil {
		return nil, nil, err
	}
	c.finish()
	return c.rep, c, nil
}

// flockTimeout takes the exclusive lock of f, waiting at most d.
func flockTimeout(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the file stays locked by another process for %s; stop the agents and try again", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next returns the next line (with its newline when it has one), io.EOF at
// the end.
func (c *fsck) next() (fsckLine, error) {
	if n := len(c.back); n > 0 {
		l := c.back[0]
		c.back = c.back[1:]
		return l, nil
	}
	b, err := c.r.ReadBytes('\n')
	if len(b) == 0 && err != nil {
		if err == io.EOF {
			return fsckLine{}, io.EOF
		}
		return fsckLine{}, fmt.Errorf("memfile: fsck: read %s: %w", c.path, err)
	}
	c.line++
	l := fsckLine{b: b, off: c.off, line: c.line}
	c.off += int64(len(b))
	return l, nil
}

func (c *fsck) problem(l fsckLine, dropped []string, format string, args ...any) {
	c.rep.Problems = append(c.rep.Problems, Problem{Line: l.line, Offset: l.off, What: fmt.Sprintf(format, args...), Dropped: dropped})
	for _, id := range dropped {
		c.dropped[id] = c.seq
		c.seq++
	}
}

// scan reads every line: the header, snapshot documents, journal records.
// A damaged record is dropped whole, and the scan goes on at the next
// record that checks out.
func (c *fsck) scan() error {
	first, err := c.next()
	if err == io.EOF {
		return nil // an empty file: an empty store
	}
	if err != nil {
		return err
	}
	if string(first.b) != fileHeader {
		c.problem(first, nil, "not the header of an aso state file: %.60q", first.b)
		if bytes.HasPrefix(first.b, []byte("{")) {
			c.back = append(c.back, first)
		}
	}
	skipping := false // after a damaged record: until the next good one
	for {
		l, err := c.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case bytes.HasPrefix(l.b, batchPrefix):
			ok, err := c.record(l)
			if err != nil {
				return err
			}
			skipping = !ok
		case skipping && l.reported:
		case skipping:
			c.problem(l, idsOf(l.b), "a line after a damaged journal record, before the next whole one; it is dropped")
		case len(bytes.TrimSpace(l.b)) > 0:
			c.doc(l)
		}
	}
}

// record checks the journal record whose header is h and applies its
// documents; false if it is damaged (its lines are then read again).
func (c *fsck) record(h fsckLine) (bool, error) {
	var bh batchHeader
	if err := json.Unmarshal(h.b, &bh); err != nil || bh.Docs < 0 || bh.Bytes < 0 || len(bh.CRC) != 8 {
		c.problem(h, nil, "bad journal record header %.80q", bytes.TrimSpace(h.b))
		return false, nil
	}
	var body []fsckLine
	size := 0
	for len(body) < bh.Docs && size < bh.Bytes {
		l, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
		body = append(body, l)
		size += len(l.b)
	}
	crc := crc32.New(crcTable)
	for _, l := range body {
		crc.Write(l.b)
	}
	var why string
	switch {
	case len(body) < bh.Docs || size < bh.Bytes:
		if _, err := c.r.Peek(1); err == io.EOF && len(c.back) == 0 {
			c.rep.TornTail = &Problem{Line: h.line, Offset: h.off, What: fmt.Sprintf("a last record cut short (%d of %d bytes): a crash while appending; a store drops it", size, bh.Bytes)}
			for _, l := range body {
				c.rep.TornTail.Dropped = append(c.rep.TornTail.Dropped, idsOf(l.b)...)
			}
			return true, nil
		}
		why = fmt.Sprintf("holds %d documents in %d bytes, its header says %d in %d", len(body), size, bh.Docs, bh.Bytes)
	case size != bh.Bytes:
		why = fmt.Sprintf("is %d bytes long, its header says %d", size, bh.Bytes)
	case fmt.Sprintf("%08x", crc.Sum32()) != bh.CRC:
		why = "fails its checksum"
	}
	if why != "" {
		var ids []string
		for _, l := range body {
			ids = append(ids, idsOf(l.b)...)
		}
		c.problem(h, ids, "journal record of %d documents %s; it is dropped", bh.Docs, why)
		for i := range body {
			body[i].reported = true
		}
		c.back = append(body, c.back...) // a later record may start inside
		return false, nil
	}
	for _, l := range body {
		c.doc(l)
	}
	return true, nil
}

// doc applies one document line. A line that is not a document is damage;
// one that is not a valid transfer is kept, as a store keeps it.
func (c *fsck) doc(l fsckLine) {
	raw := bytes.TrimSuffix(l.b, []byte{'\n'})
	var d anyDoc
	err := decodeDoc(raw, &d)
	if err != nil && d.ID == "" {
		c.problem(l, nil, "not a document (%v); it is dropped", err)
		return
	}
	if err != nil {
		c.rep.Invalid++ // kept as a store keeps it: reported by status
	}
	c.docs[d.ID] = fsckDoc{at: span{off: l.off, n: len(raw)}, line: l.line, seq: c.seq}
	c.seq++
}

// finish counts the survivors and the fate of every dropped document.
func (c *fsck) finish() {
	c.rep.Documents = len(c.docs)
	ids := make([]string, 0, len(c.dropped))
	for id := range c.dropped {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		d, ok := c.docs[id]
		switch {
		case !ok:
			c.rep.Losses = append(c.rep.Losses, Loss{ID: id})
		case d.seq < c.dropped[id]: // a later version was dropped
			c.rep.Losses = append(c.rep.Losses, Loss{ID: id, Line: d.line})
		}
	}
}

// idsOf returns the ID a damaged line names, if it can be read.
func idsOf(b []byte) []string {
	if id := lineID(bytes.TrimSuffix(b, []byte{'\n'})); id != nil {
		return []string{string(id)}
	}
	return nil
}

// Salvage writes to out (which must not exist) a state file holding every
// document of the file at path that Check finds readable, each in its last
// readable version, and returns the report of what was dropped. The
// original is left as it is: the operator moves the new file into place
// while no agent runs.
func Salvage(path, out string) (*Report, error) {
	rep, c, err := check(path)
	if err != nil {
		return nil, err
	}
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("memfile: salvage: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memfile: salvage: %w", err)
	}
	fail := func(err error) (*Report, error) {
		dst.Close()
		os.Remove(out)
		return nil, fmt.Errorf("memfile: salvage %s into %s: %w", path, out, err)
	}
	docs := make([]fsckDoc, 0, len(c.docs))
	for _, d := range c.docs {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b fsckDoc) int { return int(a.at.off - b.at.off) })
	spans := make([]span, len(docs))
	for i := range docs {
		spans[i] = docs[i].at
	}
	w := bufio.NewWriterSize(dst, 1<<20)
	w.WriteString(fileHeader)
	rs := &source{f: src, path: path}
	if err := rs.readSpans(spans, func(_ int, b []byte) error {
		w.Write(b)
		return w.WriteByte('\n')
	}); err != nil {
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := dst.Sync(); err != nil {
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		return fail(err)
	}
	if err := syncDir(out); err != nil {
		return nil, fmt.Errorf("memfile: salvage: %w", err)
	}
	return rep, nil
}
