package memfile

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// commit appends what x staged as one record (fsynced when durable) and
// applies it to the index. A read-only file refuses it.
func (j *journal) commit(x *tx, call string, durable bool) error {
	if x.empty() {
		return nil
	}
	if j.opts.ReadOnly {
		return fmt.Errorf("memfile: %s: %s: %w", call, j.path, ErrReadOnly)
	}
	at := j.off
	spans, rec, err := j.appendRecord(x.staged(), durable)
	if err != nil {
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	x.apply(spans, rec, at)
	return nil
}

// appendRecord appends docs as one record and returns where each lies in
// the file, and the record (valid until the next).
func (j *journal) appendRecord(docs []any, durable bool) ([]span, []byte, error) {
	rec, spans, kept, err := encodeBatch(j.wbuf, docs)
	if j.wbuf = kept; cap(kept) > maxKeptBuffer {
		j.wbuf = nil
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		_ = j.f.Truncate(j.off)
		return nil, nil, err
	}
	if durable {
		start := time.Now()
		if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
			_ = j.f.Truncate(j.off)
			return nil, nil, err
		}
		j.stats.Fsyncs++
		j.stats.SyncTime += time.Since(start)
	}
	if j.snapEnd < 0 {
		j.snapEnd = j.off
	}
	for i := range spans {
		spans[i].off += j.off
	}
	j.off += int64(len(rec))
	j.line += 1 + len(docs)
	j.stats.JournalRecords++
	return spans, rec, nil
}

// maxKeptBuffer bounds the encoding buffer a journal keeps between records.
const maxKeptBuffer = 16 << 20

// compactIfDue compacts the file once the journal has grown past both
// Options.CompactBytes and twice the snapshot. A failure is a warning:
// the journal keeps growing, and the next try waits until it has grown as
// much again.
func (j *journal) compactIfDue() {
	due := !j.opts.ReadOnly && j.snapEnd >= 0 && j.off-j.snapEnd > max(j.opts.CompactBytes, 2*j.snapEnd) && j.off >= j.noCompactBelow
	if !due {
		return
	}
	if err := j.compact(); err != nil {
		j.noCompactBelow = j.off + max(j.opts.CompactBytes, j.off)
		j.warn("memfile: compact %s: %v (the journal keeps growing; trying again later)", j.path, err)
	}
}

// compact replaces the file by a snapshot of j.d.
func (j *journal) compact() error {
	start := time.Now()
	defer func() { j.stats.CompactTime += time.Since(start) }()
	f, size, docs, err := writeSnapshot(j.path, j.d, j.f)
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), j.path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := syncDir(j.path); err != nil {
		j.warn("memfile: sync directory of %s: %v", j.path, err)
	}
	j.f.Close() // waiters on the old file see it was replaced
	j.setFile(f)
	moved := make(map[int64]int64, len(docs))
	for _, l := range docs {
		if l.slot >= 0 {
			j.d.metas[l.slot].at.off = l.to
			moved[l.from.off] = l.to
		} else {
			bad := j.d.invalid[l.id]
			bad.at.off = l.to
			j.d.invalid[l.id] = bad
		}
	}
	j.d.cache.move(moved)
	j.off, j.snapEnd = size, size
	j.line = 1 + len(j.d.ids) + len(j.d.locks) + len(j.d.invalid)
	j.stats.Compactions++
	return nil
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
