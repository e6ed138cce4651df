package memfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"
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
	// TornTail is an incomplete journal record at the end of the file,
	// which a store drops on open: a crash while appending, not damage.
	TornTail *Problem `json:"torn_tail,omitempty"`
}

// Damaged reports whether r found damage a store cannot open past.
func (r *Report) Damaged() bool { return len(r.Problems) > 0 }

// fsck is the state of one Check: the last readable version of each
// document, and the versions dropped.
type fsck struct {
	rep     *Report
	docs    map[string]fsckDoc
	dropped map[string]int // ID -> seq of its last dropped version
	seq     int
	keep    bool // keep the lines of the documents (for Salvage)
}

// fsckDoc is the surviving version of a document.
type fsckDoc struct {
	line, seq int
	invalid   bool
	raw       []byte // with keep
}

// Check reads the state file at path to the end, past any damage, and
// reports every problem and what survives. It takes the file's lock while
// it reads, so a running agent waits (at most the time of the read).
func Check(path string) (*Report, error) {
	rep, _, err := check(path, false)
	return rep, err
}

func check(path string, keep bool) (*Report, *fsck, error) {
	f, err := osOpen(path, Options{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err = flock(ctx, f); ctx.Err() != nil {
			err = errors.New("the file stays locked by another process for 30s; stop the agents and try again")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("memfile: fsck %s: %w", path, err)
	}
	head := make([]byte, min(fi.Size(), int64(len(fileHeader))))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, nil, fmt.Errorf("memfile: fsck: %w", err)
	}
	if len(head) < len(fileHeader) && (string(head) == fileHeader[:len(head)] || string(head) == fileHeaderV1[:len(head)]) {
		return nil, nil, emptyFile{"memfile: fsck: " + path + " is an empty file, not a store yet"}
	}
	c := &fsck{rep: &Report{Path: path}, docs: map[string]fsckDoc{}, dropped: map[string]int{}, keep: keep}
	v1 := string(head) == fileHeaderV1
	rd := newReader(f, path, v1, int64(len(fileHeader)), fi.Size(), 1)
	if !v1 && string(head) != fileHeader {
		rd.seek(0, 0)
		err = c.skip(rd, &damage{line: 1, what: fmt.Sprintf("not the header of an aso state file: %.60q", head)})
	}
	if err == nil {
		err = c.scan(rd)
	}
	if err != nil {
		return nil, nil, err
	}
	c.finish()
	return c.rep, c, nil
}

// scan reads every record to the end of the file, reading on past damage.
func (c *fsck) scan(rd *reader) error {
	for {
		rec, err := rd.next()
		var torn *tornTail
		var dmg *damage
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &torn):
			c.rep.TornTail = &Problem{Line: torn.line, Offset: torn.at, What: torn.Error() + "; a store drops it"}
			return eachLine(rd, torn.at, rd.end, func(b []byte) bool {
				c.rep.TornTail.Dropped = append(c.rep.TornTail.Dropped, idsOf(b)...)
				return true
			})
		case errors.As(err, &dmg):
			if err := c.skip(rd, dmg); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			c.record(rec)
		}
	}
}

// record applies the documents of rec. A line that is not a document is
// damage; one that is not a valid transfer is kept, as a store keeps it.
func (c *fsck) record(rec record) {
	line := rec.line + 1
	if rec.bare {
		line = rec.line
	}
	for k, raw := range rec.docs {
		var d anyDoc
		err := decodeDoc(raw, &d)
		if errors.Is(err, errNotDoc) {
			c.rep.Problems = append(c.rep.Problems, Problem{Line: line + k, Offset: rec.at, What: fmt.Sprintf("%v; it is dropped", err)})
			continue
		}
		doc := fsckDoc{line: line + k, seq: c.seq, invalid: err != nil}
		if c.keep {
			doc.raw = bytes.Clone(raw)
		}
		c.docs[d.ID] = doc
		c.seq++
	}
}

// skip reports the damage d and moves rd past it: to the end of its
// record when its header is sound, else to the next line that starts a
// record that checks out (or an incomplete last one). The documents the
// lines in between name are dropped.
func (c *fsck) skip(rd *reader, d *damage) error {
	c.rep.Problems = append(c.rep.Problems, Problem{Line: d.line, Offset: d.at, What: d.what + "; it is dropped"})
	p := &c.rep.Problems[len(c.rep.Problems)-1]
	at, line, end := d.at, d.line-1, rd.end
	if d.next > 0 {
		end = d.next
	}
	err := eachLine(rd, d.at, end, func(b []byte) bool {
		if d.next == 0 && at > d.at && (bytes.HasPrefix(b, batchPrefix) || bytes.HasPrefix(b, snapPrefix)) && recordAt(rd, at, line) {
			return false
		}
		for _, id := range idsOf(b) {
			p.Dropped = append(p.Dropped, id)
			c.dropped[id] = c.seq
			c.seq++
		}
		at, line = at+int64(len(b)), line+1
		return true
	})
	rd.seek(at, line)
	return err
}

// recordAt reports whether a record that checks out starts at offset at
// (line line+1), or an incomplete last one.
func recordAt(rd *reader, at int64, line int) bool {
	rec, err := newReader(rd.f, rd.path, rd.v1, at, rd.end, line).next()
	var torn *tornTail
	return err == nil && !rec.bare || errors.As(err, &torn)
}

// eachLine passes each line of rd's file from at to end to fn, while fn
// returns true.
func eachLine(rd *reader, at, end int64, fn func(b []byte) bool) error {
	r := bufio.NewReader(io.NewSectionReader(rd.f, at, end-at))
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && !fn(b) || err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("memfile: fsck: read %s: %w", rd.path, err)
		}
	}
}

// finish counts the survivors and the fate of every dropped document.
func (c *fsck) finish() {
	c.rep.Documents = len(c.docs)
	for _, d := range c.docs {
		if d.invalid {
			c.rep.Invalid++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.dropped)) {
		d, ok := c.docs[id]
		switch {
		case !ok:
			c.rep.Losses = append(c.rep.Losses, Loss{ID: id})
		case d.seq < c.dropped[id]: // a later version was dropped
			c.rep.Losses = append(c.rep.Losses, Loss{ID: id, Line: d.line})
		}
	}
}

// idsOf returns the ID a line names: its _id if it decodes, else the ID
// it starts with as the store writes a document (a damaged line may
// still say which document it held).
func idsOf(b []byte) []string {
	var d struct {
		ID string `json:"_id"`
	}
	if json.Unmarshal(b, &d) == nil && d.ID != "" {
		return []string{d.ID}
	}
	if rest, ok := bytes.CutPrefix(b, []byte(`{"_id":"`)); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 {
			return []string{string(rest[:i])}
		}
	}
	return nil
}

// Salvage writes to out (which must not exist) a state file holding every
// document of the file at path that Check finds readable, each in its last
// readable version, and returns the report of what was dropped. The
// original is left as it is: the operator moves the new file into place
// while no agent runs.
func Salvage(path, out string) (*Report, error) {
	rep, c, err := check(path, true)
	if err != nil {
		return nil, err
	}
	docs := make([]fsckDoc, 0, len(c.docs))
	for _, d := range c.docs {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b fsckDoc) int { return a.seq - b.seq })
	lines := make([]any, len(docs))
	for i := range docs {
		lines[i] = docs[i].raw
	}
	f, _, err := writeSnapshot(out, os.O_EXCL, lines)
	if err == nil {
		f.Close()
		err = syncDir(out)
	}
	if err != nil {
		return nil, fmt.Errorf("memfile: salvage %s into %s: %w", path, out, err)
	}
	return rep, nil
}
