package memfile

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

// commit appends what x staged as one record (fsynced when durable) and
// puts it in memory, as a reader of the file reads it. A read-only file
// refuses it.
func (f *file) commit(x *tx, call string, durable bool) error {
	if len(x.order) == 0 {
		return nil
	}
	if f.opts.ReadOnly {
		return fmt.Errorf("memfile: %s: %s: %w", call, f.path, ErrReadOnly)
	}
	docs := x.staged()
	rec, ends, err := encodeRecord(f.wbuf, false, docs)
	if err == nil {
		_, err = f.f.WriteAt(rec, f.off)
	}
	if err == nil && durable {
		start := time.Now()
		if err = unix.Fdatasync(int(f.f.Fd())); err == nil {
			f.stats.Fsyncs++
			f.stats.SyncTime += time.Since(start)
		}
	}
	if err != nil {
		_ = f.f.Truncate(f.off)
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	f.off += int64(len(rec))
	f.line += 1 + len(docs)
	f.stats.JournalRecords++
	start := bytes.IndexByte(rec, '\n') + 1
	for i, d := range docs {
		line := rec[start:ends[i]]
		start = ends[i] + 1
		switch d := d.(type) {
		case *state.LockDoc:
			f.d.putLock(d)
		case *state.Transfer:
			if written(d, line) {
				f.d.put(d)
			} else if err := f.d.apply(line); err != nil {
				return fmt.Errorf("memfile: %s: wrote %s, which does not read back: %w", call, d.ID, err)
			}
		}
	}
	if f.wbuf = rec[:0]; cap(rec) > 16<<20 {
		f.wbuf = nil // a huge record: do not keep its buffer
	}
	return nil
}

// compactIfDue compacts the file once the journal has grown past both
// Options.CompactBytes and twice the snapshot. A failure is a warning: the
// journal keeps growing, and the next try waits until it has grown as
// much again.
func (f *file) compactIfDue() {
	if f.opts.ReadOnly || f.off-f.snapEnd <= max(f.opts.CompactBytes, 2*f.snapEnd) || f.off < f.noCompactBelow {
		return
	}
	if err := f.compact(); err != nil {
		f.noCompactBelow = f.off + max(f.opts.CompactBytes, f.off)
		f.warn("memfile: compact %s: %v (the journal keeps growing; trying again later)", f.path, err)
	}
}

// compact replaces the file by a snapshot of what memory holds.
func (f *file) compact() error {
	start := time.Now()
	defer func() { f.stats.CompactTime += time.Since(start) }()
	docs := make([]any, 0, len(f.d.docs)+len(f.d.invalid)+len(f.d.locks))
	for _, t := range f.d.docs {
		docs = append(docs, t)
	}
	for _, bad := range f.d.invalid {
		docs = append(docs, bad.raw)
	}
	for _, l := range f.d.locks {
		docs = append(docs, l)
	}
	nf, size, err := writeSnapshot(f.path+compactSuffix, os.O_TRUNC, docs)
	if err != nil {
		return err
	}
	if err := os.Rename(nf.Name(), f.path); err != nil {
		nf.Close()
		os.Remove(nf.Name())
		return err
	}
	if err := syncDir(f.path); err != nil {
		f.warn("memfile: sync directory of %s: %v", f.path, err)
	}
	f.f.Close() // waiters on the old file see it was replaced
	f.f, f.v1 = nf, false
	f.off, f.snapEnd, f.line = size, size, 1+(len(docs)+snapChunk-1)/snapChunk+len(docs)
	f.stats.Compactions++
	return nil
}

// snapChunk is how many documents a snapshot record holds: one, so that
// damage to a snapshot costs one document.
const snapChunk = 1

// writeSnapshot writes a state file at path (opened with flag, O_TRUNC or
// O_EXCL) holding docs (transfers, locks and lines kept as they are) in
// snapshot records, and returns it open, synced and flocked, with its
// size.
func writeSnapshot(path string, flag int, docs []any) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flag, 0o600)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*os.File, int64, error) {
		f.Close()
		os.Remove(path)
		return nil, 0, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fail(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(fileHeader)
	size := int64(len(fileHeader))
	var buf []byte
	for chunk := range slices.Chunk(docs, snapChunk) {
		rec, _, err := encodeRecord(buf, true, chunk)
		if err != nil {
			return fail(err)
		}
		w.Write(rec)
		size += int64(len(rec))
		buf = rec[:0]
	}
	if err := cmp.Or(w.Flush(), f.Sync()); err != nil {
		return fail(err)
	}
	return f, size, nil
}

// syncDir makes a rename or a creation in the directory of path durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// purge removes the terminal transfers o selects (see Store.Purge),
// archived first, and rewrites the file without them; by and the clock
// are recorded in the history of the archived copies. If the rewrite
// fails, memory no longer matches the file and is read again by the next
// call.
func (f *file) purge(o state.PurgeOptions, by string) (int, error) {
	var ts []*state.Transfer
	for _, t := range f.d.docs {
		if o.Purgeable(t) {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return 0, nil
	}
	sort.Slice(ts, func(i, j int) bool { return state.ListLess(ts[i], ts[j]) })
	if o.Archive != nil {
		for chunk := range slices.Chunk(ts, 10000) {
			out := clones(chunk)
			state.NotePurged(out, by, f.now())
			if err := o.Archive.Write(out); err != nil {
				return 0, fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
			}
		}
		if err := o.Archive.Sync(); err != nil {
			return 0, fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
		}
	}
	for _, t := range ts {
		f.d.remove(t.ID)
	}
	if err := f.compact(); err != nil {
		f.reset() // memory no longer matches the file: read it again next time
		return 0, fmt.Errorf("memfile: purge: rewrite %s: %w (nothing removed)", f.path, err)
	}
	if o.Progress != nil {
		o.Progress(len(ts)) // one rewrite removes them all
	}
	return len(ts), nil
}
