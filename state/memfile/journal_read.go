package memfile

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// catchUp applies the records appended since j.off. Called with the flock held.
func (j *journal) catchUp() error {
	fi, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("memfile: stat %s: %w", j.path, err)
	}
	size := fi.Size()
	if size < j.off {
		j.reset()
	}
	if size == j.off && j.off > 0 {
		return nil
	}
	if j.off == 0 {
		if fresh, err := j.readHeader(size); err != nil || fresh {
			return err
		}
	}
	sc := newScanner(j.f, j.path, j.off, size, j.line)
	torn, noNewline := false, false
	tornAt, tornLine := int64(0), 0
	for sc.pos < size && !torn {
		at, line := sc.pos, sc.line
		batch := false
		if b, err := sc.r.Peek(len(batchPrefix)); err == nil {
			batch = bytes.Equal(b, batchPrefix)
		}
		switch err := sc.record(); {
		case errors.Is(err, errTorn):
			torn, tornAt, tornLine = true, at, line
		case errors.Is(err, errNoNewline):
			noNewline = true
		case err != nil:
			return err
		}
		if batch && !torn && j.snapEnd < 0 {
			j.snapEnd = at
		}
	}
	// every record is whole and checked: now decode and apply them
	if err := decodeAll(&j.src, sc.docs, j.applyDoc); err != nil {
		return err
	}
	if torn {
		return j.dropTorn(tornAt, tornLine, size)
	}
	if noNewline && !j.opts.ReadOnly { // end the hand-written line before anything is appended
		if _, err := j.f.WriteAt([]byte{'\n'}, size); err != nil {
			return fmt.Errorf("memfile: end the last line of %s: %w", j.path, err)
		}
		size++
	}
	j.off, j.line = size, sc.line
	return nil
}

// readHeader checks the first line, writing it to an empty file; fresh
// says it wrote it.
func (j *journal) readHeader(size int64) (fresh bool, err error) {
	first := make([]byte, min(size, 240))
	if _, err := j.f.ReadAt(first, 0); err != nil {
		return false, fmt.Errorf("memfile: read %s: %w", j.path, err)
	}
	if bytes.HasPrefix(first, []byte(fileHeader)) {
		j.off, j.line = int64(len(fileHeader)), 1
		return false, nil
	}
	if len(first) >= len(fileHeader) || !bytes.HasPrefix([]byte(fileHeader), first) {
		return false, fmt.Errorf("memfile: %s:1: %w (first line %.60q); move it away or give another --state", j.path, ErrNotStateFile, first)
	}
	// empty, or a creation cut short
	if j.opts.ReadOnly {
		return true, nil // an empty store, left as it is
	}
	if err := j.f.Truncate(0); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", j.path, err)
	}
	if _, err := j.f.WriteAt([]byte(fileHeader), 0); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", j.path, err)
	}
	if err := syncDir(j.path); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", j.path, err)
	}
	j.off, j.line = int64(len(fileHeader)), 1
	return true, nil
}

// dropTorn truncates the file at offset at (line line), where a record of
// size-at bytes was cut short.
func (j *journal) dropTorn(at int64, line int, size int64) error {
	if j.opts.ReadOnly {
		j.warn("memfile: %s:%d (offset %d): skipped a torn last record (%d bytes), written by a process that died while appending", j.path, line+1, at, size-at)
		j.off, j.line = at, line
		return nil
	}
	j.warn("memfile: %s:%d (offset %d): dropped a torn last record (%d bytes), written by a process that died while appending", j.path, line+1, at, size-at)
	if err := j.f.Truncate(at); err != nil {
		return fmt.Errorf("memfile: truncate %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("memfile: sync %s: %w", j.path, err)
	}
	j.off, j.line = at, line
	return nil
}

// applyDoc puts one document read from the file at off into the db.
func (j *journal) applyDoc(id string, d *anyDoc, raw []byte, bad string, off int64) {
	sp := span{off: off, n: len(raw)}
	switch {
	case bad != "":
		j.d.putInvalid(id, bad, sp)
	case d.Type == state.LockDocType:
		j.d.putLock(&state.LockDoc{ID: d.ID, Rev: d.Rev, Type: state.LockDocType, User: d.User, Holder: d.Holder, Expire: d.Expire, Since: d.Since, LastRun: d.LastRun})
	default:
		j.d.put(&d.Transfer, sp)
		j.d.cache.addIfRoom(sp, &d.Transfer)
	}
}
