package memfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

// Stats counts what a handle did to its file, for benchmarks.
type Stats struct {
	Fsyncs         int64 // fsyncs of the state file
	JournalRecords int64 // records appended by this handle
	Compactions    int64 // compactions done by this handle
	Reloads        int64 // full re-reads after another handle compacted the file
	// SyncTime is the time spent in fsync of journal records, CompactTime
	// the time spent compacting (fsyncs included).
	SyncTime, CompactTime time.Duration
}

// file is a Store's handle on its state file: the open file, how far it
// has been read into memory (db), and the policy of its compaction. It
// runs every call of the Store as one operation: under its mutex and the
// file's flock, on the file as it is now (what others appended applied
// first), staging the call's writes in a tx that is appended as one
// record (file_write.go). Its Stats and Compact are the Store's.
type file struct {
	mu   sync.Mutex
	path string
	opts Options
	f    *os.File
	now  func() time.Time
	d    *db
	v1   bool  // a file of format 1 (fileHeaderV1)
	off  int64 // bytes of the file applied to d
	line int   // lines of the file applied to d
	// snapEnd is where the snapshot records end (the file's header when
	// there are none): what follows is the journal.
	snapEnd int64
	// noCompactBelow: after a failed compaction, wait until the file has
	// grown past this before trying again (a full disk must not make every
	// call rewrite the file).
	noCompactBelow int64
	skipped        int64  // a torn last record a read-only handle warned about
	wbuf           []byte // the encoding buffer of records, reused
	stats          Stats
	closed         bool
	damaged        bool // Options.Damaged was told
}

// openFile opens the state file at path and reads it, waiting at most
// o.LockWait for its lock. A file of format 1 is rewritten in format 2
// unless o.ReadOnly.
func openFile(path string, o Options, now func() time.Time) (*file, error) {
	osf, err := osOpen(path, o)
	if err != nil {
		return nil, err
	}
	f := &file{path: path, opts: o, f: osf, now: now}
	f.reset()
	ctx, cancel := context.WithTimeout(context.Background(), o.LockWait)
	err = f.lock(ctx)
	cancel()
	if err == nil {
		err = f.catchUp()
		if err == nil && f.v1 && !o.ReadOnly {
			err = f.compact()
		}
		f.unlock()
	}
	if err != nil {
		f.f.Close()
		return nil, err
	}
	return f, nil
}

// reset forgets what was read: the next catchUp reads the file from its
// start.
func (f *file) reset() {
	f.d, f.off, f.line, f.snapEnd, f.skipped = newDB(), 0, 0, 0, -1
}

func (f *file) warn(format string, args ...any) {
	if f.opts.Warn != nil {
		f.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// lock takes the flock of the state file, polling while another handle
// or process holds it, so that a holder that hangs cannot block a call
// past its context. If another handle replaced the file (compaction) it
// opens the new one and reads it from its start.
func (f *file) lock(ctx context.Context) error {
	for {
		if err := flock(ctx, f.f); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("memfile: waiting for the lock of %s, held by another process: %w", f.path, ctx.Err())
			}
			return fmt.Errorf("memfile: lock %s: %w", f.path, err)
		}
		var held, named unix.Stat_t
		err := unix.Fstat(int(f.f.Fd()), &held)
		if err == nil {
			err = unix.Stat(f.path, &named)
		}
		if err != nil {
			f.unlock()
			return fmt.Errorf("memfile: state file %s: %w (was it removed?)", f.path, err)
		}
		if held.Dev == named.Dev && held.Ino == named.Ino {
			return nil
		}
		nf, err := osOpen(f.path, Options{ReadOnly: f.opts.ReadOnly})
		if err != nil {
			f.unlock()
			return err
		}
		f.f.Close() // releases the lock of the old file
		f.f = nf
		f.reset()
		f.stats.Reloads++
	}
}

func (f *file) unlock() { _ = unix.Flock(int(f.f.Fd()), unix.LOCK_UN) }

// flock takes the exclusive flock of fd, polling while another handle or
// process holds it, until ctx ends.
func flock(ctx context.Context, fd *os.File) error {
	try := func() error {
		err := unix.Flock(int(fd.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			return backoff.Permanent(err)
		}
		return err
	}
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Microsecond), backoff.WithMaxInterval(5*time.Millisecond), backoff.WithMaxElapsedTime(0))
	return backoff.Retry(try, backoff.WithContext(b, ctx))
}

// catchUp applies the records appended since f.off. Called with the flock
// held. A torn last record is dropped (skipped by a read-only handle),
// with a warning; damage is an error, and nothing past it is applied.
func (f *file) catchUp() error {
	fi, err := f.f.Stat()
	if err != nil {
		return fmt.Errorf("memfile: stat %s: %w", f.path, err)
	}
	size := fi.Size()
	switch {
	case size < f.off:
		f.reset() // cut shorter by another process: read it again
	case size == f.off && f.off > 0:
		return nil
	}
	if f.off == 0 {
		if err := f.readHeader(size); err != nil {
			return err
		}
	}
	rd := newReader(f.f, f.path, f.v1, f.off, size, f.line)
	for {
		rec, err := rd.next()
		var torn *tornTail
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &torn):
			return f.dropTorn(torn)
		case err != nil:
			return err
		}
		for _, raw := range rec.docs {
			if err := f.d.apply(raw); err != nil {
				return &damage{path: f.path, line: rec.line, at: rec.at, what: err.Error()}
			}
		}
		if rec.snap {
			f.snapEnd = rd.at
		}
		f.off, f.line = rd.at, rd.line
	}
}

// readHeader reads the first line of the file, of size bytes. An empty
// file (or a creation cut short) becomes a store only with
// Options.Create: the header is written and synced, with the directory.
func (f *file) readHeader(size int64) error {
	b := make([]byte, min(size, maxHeader))
	if _, err := f.f.ReadAt(b, 0); err != nil {
		return fmt.Errorf("memfile: read %s: %w", f.path, err)
	}
	f.v1 = string(b[:min(len(b), len(fileHeaderV1))]) == fileHeaderV1
	switch {
	case f.v1 || string(b[:min(len(b), len(fileHeader))]) == fileHeader:
	case len(b) >= len(fileHeader) || string(b) != fileHeader[:len(b)] && string(b) != fileHeaderV1[:len(b)]:
		return fmt.Errorf("memfile: %s:1: %w (first line %.60q); move it away or give another --state", f.path, ErrNotStateFile, b)
	case !f.opts.Create || f.opts.ReadOnly:
		return emptyFile{"memfile: " + f.path + " is an empty file, not a store yet"}
	default:
		err := f.f.Truncate(0)
		if err == nil {
			_, err = f.f.WriteAt([]byte(fileHeader), 0)
		}
		if err == nil {
			err = f.f.Sync()
		}
		if err == nil {
			err = syncDir(f.path)
		}
		if err != nil {
			return fmt.Errorf("memfile: create %s: %w", f.path, err)
		}
	}
	f.off, f.line, f.snapEnd = int64(len(fileHeader)), 1, int64(len(fileHeader))
	return nil
}

// dropTorn cuts the torn last record t off the file, as a crash during
// its append left it, with a warning: a read-only handle skips it, and
// warns once.
func (f *file) dropTorn(t *tornTail) error {
	if f.opts.ReadOnly {
		if f.skipped != t.at {
			f.warn("memfile: %s:%d (offset %d): skipped %v", f.path, t.line, t.at, t)
		}
		f.skipped = t.at
		return nil
	}
	f.warn("memfile: %s:%d (offset %d): dropped %v", f.path, t.line, t.at, t)
	if err := f.f.Truncate(t.at); err != nil {
		return fmt.Errorf("memfile: truncate %s: %w", f.path, err)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("memfile: sync %s: %w", f.path, err)
	}
	return nil
}

// Stats returns the counters of this handle.
func (f *file) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Compact rewrites the file as a snapshot of the current documents.
func (f *file) Compact(ctx context.Context) error {
	return f.update(ctx, "compact", false, func(*tx, time.Time) error {
		if f.opts.ReadOnly {
			return fmt.Errorf("memfile: compact %s: %w", f.path, ErrReadOnly)
		}
		if err := f.compact(); err != nil {
			return fmt.Errorf("memfile: compact %s: %w", f.path, err)
		}
		return nil
	})
}

// close releases the file and the memory of the handle. Later calls fail.
func (f *file) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed, f.d, f.wbuf = true, nil, nil
	return f.f.Close()
}

// locked runs fn under the handle's mutex and the file lock, once the
// records others appended are applied.
func (f *file) locked(ctx context.Context, call string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("memfile: %s: store %s is closed", call, f.path)
	}
	if err := f.lock(ctx); err != nil {
		return err
	}
	defer f.unlock()
	if err := f.catchUp(); err != nil {
		if errors.Is(err, ErrDamaged) && f.opts.Damaged != nil && !f.damaged {
			f.damaged = true
			f.opts.Damaged(err)
		}
		return err
	}
	return fn()
}

// do runs fn as one operation of f on a tx and appends what it staged as
// one record (fsynced when durable), then compacts the file if it is due,
// and returns fn's result (the zero T on an error). The caller's write
// fence is checked under the file lock: a caller paused while it waited
// for the lock may have lost its run lock. A call that only reads stages
// nothing, and nothing is written.
func do[T any](ctx context.Context, f *file, call string, durable bool, fn func(x *tx, now time.Time) (T, error)) (T, error) {
	var out, zero T
	err := f.locked(ctx, call, func() error {
		if err := state.CheckFence(ctx); err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		x := &tx{d: f.d, docs: map[string]*state.Transfer{}, locks: map[string]*state.LockDoc{}, revGen: rand.Uint64}
		var err error
		if out, err = fn(x, f.now()); err != nil {
			return err
		}
		if err := f.commit(x, call, durable); err != nil {
			return err
		}
		f.compactIfDue()
		return nil
	})
	if err != nil {
		return zero, err
	}
	return out, nil
}

// update is do for a call that returns nothing but an error.
func (f *file) update(ctx context.Context, call string, durable bool, fn func(x *tx, now time.Time) error) error {
	_, err := do(ctx, f, call, durable, func(x *tx, now time.Time) (struct{}, error) { return struct{}{}, fn(x, now) })
	return err
}

// each applies r to the stored version of every ID (tx.each) in one
// operation.
func (f *file) each(ctx context.Context, call string, durable bool, ids []string, r rule) ([]state.Result, error) {
	return do(ctx, f, call, durable, func(x *tx, now time.Time) ([]state.Result, error) {
		return x.each(call, ids, r, now), nil
	})
}
