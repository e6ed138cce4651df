package memfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

var _ state.Store = (*Store)(nil)

// ErrReadOnly is the error of a write to a Store opened with ReadOnly.
var ErrReadOnly = errors.New("the state file is open read-only")

// Stats counts what a Store did, for benchmarks.
type Stats struct {
	Fsyncs         int64 // fsyncs of the state file
	JournalRecords int64 // records appended by this handle
	Compactions    int64 // compactions done by this handle
	Reloads        int64 // full re-reads after another handle compacted the file
	// SyncTime is the time spent in fsync of journal records, CompactTime
	// the time spent compacting (fsyncs included).
	SyncTime, CompactTime time.Duration
}

// Store is a state.Store on one file. It is safe for concurrent use, and
// several Stores (in one or several processes) may share the file.
type Store struct {
	path   string
	agent  state.Agent
	policy state.Policy
	now    func() time.Time
	opts   Options

	mu      sync.Mutex
	f       *os.File
	off     int64 // bytes of the file applied to d
	line    int   // lines of the file applied to d
	snapEnd int64 // offset of the first journal record; -1 before one is seen
	// noCompactBelow: after a failed compaction, wait until the file has
	// grown past this before trying again (a full disk must not make every
	// call rewrite the file).
	noCompactBelow int64
	d              *db
	src            source // reads documents back from f
	wbuf           []byte // the encoding buffer of records, reused
	stats          Stats
	closed         bool
}

// Open opens the state file at path, bound to cfg, creating it and its
// directory when missing: OpenOptions with Options.Create, for a program
// that owns its file. Command lines create a store only on request
// (Create).
func Open(path string, cfg state.Config) (*Store, error) {
	return OpenOptions(path, cfg, Options{Create: true})
}

// OpenOptions is Open with Options.
func OpenOptions(path string, cfg state.Config, o Options) (*Store, error) {
	if o.CompactBytes <= 0 {
		o.CompactBytes = DefaultCompactBytes
	}
	f, err := openFile(path, o)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), now: cfg.Clock(), opts: o, src: source{path: path}}
	s.setFile(f)
	s.reset()
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.LockWait)
	err = s.lock(ctx)
	cancel()
	if err != nil {
		s.f.Close()
		return nil, err
	}
	err = s.catchUp()
	s.unlock()
	if err != nil {
		s.f.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the file. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.d, s.src.buf, s.wbuf = nil, nil, nil // a closed store may stay referenced: free its memory
	return s.f.Close()
}

// Stats returns the counters of this handle.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Compact rewrites the file as a snapshot of the current documents.
func (s *Store) Compact(ctx context.Context) error {
	return s.update(ctx, "compact", true, func(*tx, time.Time) error { return nil }, true)
}

func (s *Store) reset() {
	s.d, s.off, s.line, s.snapEnd = newDB(), 0, 0, -1
}

func (s *Store) warn(format string, args ...any) {
	if s.opts.Warn != nil {
		s.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// lock takes the flock of the state file. If another handle replaced the
// file (compaction) it reopens it and starts over from the new file.
func (s *Store) lock(ctx context.Context) error {
	for {
		if err := s.flock(ctx); err != nil {
			return err
		}
		var held, named unix.Stat_t
		if err := unix.Fstat(int(s.f.Fd()), &held); err != nil {
			s.unlock()
			return fmt.Errorf("memfile: stat %s: %w", s.path, err)
		}
		if err := unix.Stat(s.path, &named); err != nil {
			s.unlock()
			return fmt.Errorf("memfile: state file %s: %w (was it removed?)", s.path, err)
		}
		if held.Dev == named.Dev && held.Ino == named.Ino {
			return nil
		}
		flags := os.O_RDWR
		if s.opts.ReadOnly {
			flags = os.O_RDONLY
		}
		f, err := os.OpenFile(s.path, flags, 0)
		if err != nil {
			s.unlock()
			return fmt.Errorf("memfile: reopen %s: %w", s.path, err)
		}
		s.f.Close() // releases the lock of the old file
		s.setFile(f)
		s.reset()
		s.stats.Reloads++
	}
}

// flock takes the exclusive flock of s.f, polling while another handle or
// process holds it, so that a holder that hangs cannot block a call past
// its context.
func (s *Store) flock(ctx context.Context) error {
	fd := int(s.f.Fd())
	try := func() error {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			return backoff.Permanent(err)
		}
		return err
	}
	if try() == nil {
		return nil
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 50*time.Microsecond, 5*time.Millisecond, 0
	if err := backoff.Retry(try, backoff.WithContext(b, ctx)); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("memfile: waiting for the lock of %s, held by another process: %w", s.path, ctx.Err())
		}
		return fmt.Errorf("memfile: lock %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) unlock() { _ = unix.Flock(int(s.f.Fd()), unix.LOCK_UN) }

// catchUp applies the records appended since s.off. Called with the flock held.
func (s *Store) catchUp() error {
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("memfile: stat %s: %w", s.path, err)
	}
	size := fi.Size()
	if size < s.off {
		s.reset()
	}
	if size == s.off && s.off > 0 {
		return nil
	}
	if s.off == 0 {
		if fresh, err := s.readHeader(size); err != nil || fresh {
			return err
		}
	}
	sc := newScanner(s.f, s.path, s.off, size, s.line)
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
		if batch && !torn && s.snapEnd < 0 {
			s.snapEnd = at
		}
	}
	// every record is whole and checked: now decode and apply them
	if err := decodeAll(&s.src, sc.docs, s.applyDoc); err != nil {
		return err
	}
	if torn {
		return s.dropTorn(tornAt, tornLine, size)
	}
	if noNewline && !s.opts.ReadOnly { // end the hand-written line before anything is appended
		if _, err := s.f.WriteAt([]byte{'\n'}, size); err != nil {
			return fmt.Errorf("memfile: end the last line of %s: %w", s.path, err)
		}
		size++
	}
	s.off, s.line = size, sc.line
	return nil
}

// readHeader checks the first line, writing it to an empty file; fresh
// says it wrote it.
func (s *Store) readHeader(size int64) (fresh bool, err error) {
	first := make([]byte, min(size, 240))
	if _, err := s.f.ReadAt(first, 0); err != nil {
		return false, fmt.Errorf("memfile: read %s: %w", s.path, err)
	}
	if bytes.HasPrefix(first, []byte(fileHeader)) {
		s.off, s.line = int64(len(fileHeader)), 1
		return false, nil
	}
	if len(first) >= len(fileHeader) || !bytes.HasPrefix([]byte(fileHeader), first) {
		return false, fmt.Errorf("memfile: %s:1: %w (first line %.60q); move it away or give another --state", s.path, ErrNotStateFile, first)
	}
	// empty, or a creation cut short
	if s.opts.ReadOnly {
		return true, nil // an empty store, left as it is
	}
	if err := s.f.Truncate(0); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if _, err := s.f.WriteAt([]byte(fileHeader), 0); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if err := syncDir(s.path); err != nil {
		return false, fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	s.off, s.line = int64(len(fileHeader)), 1
	return true, nil
}

// dropTorn truncates the file at offset at (line line), where a record of
// size-at bytes was cut short.
func (s *Store) dropTorn(at int64, line int, size int64) error {
	if s.opts.ReadOnly {
		s.warn("memfile: %s:%d (offset %d): skipped a torn last record (%d bytes), written by a process that died while appending", s.path, line+1, at, size-at)
		s.off, s.line = at, line
		return nil
	}
	s.warn("memfile: %s:%d (offset %d): dropped a torn last record (%d bytes), written by a process that died while appending", s.path, line+1, at, size-at)
	if err := s.f.Truncate(at); err != nil {
		return fmt.Errorf("memfile: truncate %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("memfile: sync %s: %w", s.path, err)
	}
	s.off, s.line = at, line
	return nil
}

// applyDoc puts one document read from the file at off into the db.
func (s *Store) applyDoc(id string, d *anyDoc, raw []byte, bad string, off int64) {
	sp := span{off: off, n: len(raw)}
	switch {
	case bad != "":
		s.d.putInvalid(id, bad, sp)
	case d.Type == state.LockDocType:
		s.d.putLock(&state.LockDoc{ID: d.ID, Rev: d.Rev, Type: state.LockDocType, User: d.User, Holder: d.Holder, Expire: d.Expire, Since: d.Since, LastRun: d.LastRun})
	default:
		s.d.put(&d.Transfer, sp)
	}
}

// update runs fn on the current state under the file lock and appends what
// it staged as one record (fsynced when durable).
func (s *Store) update(ctx context.Context, call string, durable bool, fn func(x *tx, now time.Time) error, compact ...bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memfile: %s: store %s is closed", call, s.path)
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.catchUp(); err != nil {
		return err
	}
	// the caller's write fence, checked under the file lock: a caller
	// paused while it waited for the lock may have lost its run lock
	if err := state.CheckFence(ctx); err != nil {
		return fmt.Errorf("memfile: %s: %w", call, err)
	}
	x := newTx(s.d, &s.src, rand.Uint64)
	if err := fn(x, s.now()); err != nil {
		return err
	}
	if !x.empty() && s.opts.ReadOnly {
		return fmt.Errorf("memfile: %s: %s: %w", call, s.path, ErrReadOnly)
	}
	if len(compact) > 0 && s.opts.ReadOnly {
		return fmt.Errorf("memfile: compact %s: %w", s.path, ErrReadOnly)
	}
	if !x.empty() {
		spans, err := s.write(x, durable)
		if err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		x.apply(spans)
	}
	due := !s.opts.ReadOnly && s.snapEnd >= 0 && s.off-s.snapEnd > max(s.opts.CompactBytes, 2*s.snapEnd) && s.off >= s.noCompactBelow
	if len(compact) > 0 || due {
		if err := s.compact(); err != nil {
			if len(compact) > 0 {
				return fmt.Errorf("memfile: compact %s: %w", s.path, err)
			}
			s.noCompactBelow = s.off + max(s.opts.CompactBytes, s.off)
			s.warn("memfile: compact %s: %v (the journal keeps growing; trying again later)", s.path, err)
		}
	}
	return nil
}

// view runs fn on the current state under the file lock.
func (s *Store) view(ctx context.Context, call string, fn func(x *tx, now time.Time) error) error {
	return s.update(ctx, call, false, fn)
}

// write appends the staged documents of x as one record and returns where
// each lies in the file.
func (s *Store) write(x *tx, durable bool) ([]span, error) {
	docs := make([]any, len(x.order))
	for i, id := range x.order {
		if t, ok := x.docs[id]; ok {
			docs[i] = t
		} else {
			docs[i] = x.locks[id]
		}
	}
	rec, spans, kept, err := encodeBatch(s.wbuf, docs)
	if s.wbuf = kept; cap(kept) > maxKeptBuffer {
		s.wbuf = nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.f.WriteAt(rec, s.off); err != nil {
		_ = s.f.Truncate(s.off)
		return nil, err
	}
	if durable {
		start := time.Now()
		if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
			_ = s.f.Truncate(s.off)
			return nil, err
		}
		s.stats.Fsyncs++
		s.stats.SyncTime += time.Since(start)
	}
	if s.snapEnd < 0 {
		s.snapEnd = s.off
	}
	for i := range spans {
		spans[i].off += s.off
	}
	s.off += int64(len(rec))
	s.line += 1 + len(docs)
	s.stats.JournalRecords++
	return spans, nil
}

// maxKeptBuffer bounds the encoding buffer a Store keeps between records.
const maxKeptBuffer = 16 << 20

// compact replaces the file by a snapshot of s.d. Called with the flock held.
func (s *Store) compact() error {
	start := time.Now()
	defer func() { s.stats.CompactTime += time.Since(start) }()
	f, size, docs, err := writeSnapshot(s.path, s.d, s.f)
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), s.path); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := syncDir(s.path); err != nil {
		s.warn("memfile: sync directory of %s: %v", s.path, err)
	}
	s.f.Close() // waiters on the old file see it was replaced
	s.setFile(f)
	for _, l := range docs {
		if l.slot >= 0 {
			s.d.metas[l.slot].at.off = l.to
		} else {
			bad := s.d.invalid[l.id]
			bad.at.off = l.to
			s.d.invalid[l.id] = bad
		}
	}
	s.off, s.snapEnd = size, size
	s.line = 1 + len(s.d.ids) + len(s.d.locks) + len(s.d.invalid)
	s.stats.Compactions++
	return nil
}

// setFile makes f the state file of s.
func (s *Store) setFile(f *os.File) {
	s.f = f
	s.src.f = f
}
