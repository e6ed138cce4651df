package memfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

var _ state.Store = (*Store)(nil)

// DefaultCompactBytes is the journal size below which a file is never compacted.
const DefaultCompactBytes = 4 << 20

// Options tune a Store beyond its state.Config.
type Options struct {
	// Warn receives warnings, such as a torn last record that was dropped.
	// nil discards them.
	Warn func(msg string)
	// CompactBytes: the journal is compacted once it is larger than both this
	// and twice the snapshot (0: DefaultCompactBytes).
	CompactBytes int64
}

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
	stats          Stats
	closed         bool
}

// Open opens (creating it and its directory if missing) the state file at
// path, bound to cfg.
func Open(path string, cfg state.Config) (*Store, error) {
	return OpenOptions(path, cfg, Options{})
}

// OpenOptions is Open with Options.
func OpenOptions(path string, cfg state.Config, o Options) (*Store, error) {
	if o.CompactBytes <= 0 {
		o.CompactBytes = DefaultCompactBytes
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("memfile: open %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memfile: open %s: %w", path, err)
	}
	s := &Store{path: path, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), now: cfg.Clock(), opts: o, f: f}
	s.reset()
	if err := s.lock(context.Background()); err != nil {
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
	s.d = nil // a closed store may stay referenced: free the documents
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
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			s.unlock()
			return fmt.Errorf("memfile: reopen %s: %w", s.path, err)
		}
		s.f.Close() // releases the lock of the old file
		s.f = f
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
	buf, release, err := s.read(s.off, size)
	if err != nil {
		return fmt.Errorf("memfile: read %s: %w", s.path, err)
	}
	defer release()
	p := &parser{path: s.path, buf: buf, base: s.off, line: s.line}
	if s.off == 0 {
		if err := s.readHeader(p); err != nil || p.pos == 0 {
			return err
		}
	}
	var docs []pending
	torn, noNewline := false, false
	for p.pos < len(buf) {
		batch := bytes.HasPrefix(buf[p.pos:], batchPrefix)
		next, lines, found, err := p.record()
		switch {
		case errors.Is(err, errTorn):
			torn = true
		case errors.Is(err, errNoNewline):
			noNewline = true
		case err != nil:
			return err
		}
		if torn {
			break
		}
		if batch && s.snapEnd < 0 {
			s.snapEnd = p.base + int64(p.pos)
		}
		docs = append(docs, found...)
		p.pos, p.line = next, p.line+lines
	}
	// every record is whole and checked: now decode and apply them
	if err := decodeAll(s.path, docs, s.applyDoc); err != nil {
		return err
	}
	if torn {
		return s.dropTorn(p)
	}
	if noNewline { // end the hand-written line before anything is appended
		if _, err := s.f.WriteAt([]byte{'\n'}, size); err != nil {
			return fmt.Errorf("memfile: end the last line of %s: %w", s.path, err)
		}
		size++
	}
	s.off, s.line = size, p.line
	return nil
}

// read returns the bytes of the file from off to size: mapped, not copied,
// when they are many (a whole file at open), so they do not weigh on the
// heap. Call release when done; nothing may keep a reference to them.
func (s *Store) read(off, size int64) ([]byte, func(), error) {
	if size-off < 1<<20 {
		buf := make([]byte, size-off)
		_, err := s.f.ReadAt(buf, off)
		return buf, func() {}, err
	}
	start := off &^ int64(os.Getpagesize()-1)
	m, err := unix.Mmap(int(s.f.Fd()), start, int(size-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return m[off-start:], func() { _ = unix.Munmap(m) }, nil
}

// readHeader checks the first line, writing it to an empty file. It leaves
// p.pos at 0 when it wrote a fresh header.
func (s *Store) readHeader(p *parser) error {
	if bytes.HasPrefix(p.buf, []byte(fileHeader)) {
		p.pos, p.line = len(fileHeader), 1
		return nil
	}
	if len(p.buf) >= len(fileHeader) || !bytes.HasPrefix([]byte(fileHeader), p.buf) {
		return fmt.Errorf("memfile: %s:1: not an aso state file (first line %.60q); move it away or give another --state", s.path, p.buf)
	}
	// empty, or a creation cut short
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if _, err := s.f.WriteAt([]byte(fileHeader), 0); err != nil {
		return fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	if err := syncDir(s.path); err != nil {
		return fmt.Errorf("memfile: create %s: %w", s.path, err)
	}
	s.off, s.line = int64(len(fileHeader)), 1
	return nil
}

// dropTorn truncates the file at p.pos, where a record was cut short.
func (s *Store) dropTorn(p *parser) error {
	at := p.base + int64(p.pos)
	s.warn("memfile: %s:%d (offset %d): dropped a torn last record (%d bytes), written by a process that died while appending", s.path, p.line+1, at, len(p.buf)-p.pos)
	if err := s.f.Truncate(at); err != nil {
		return fmt.Errorf("memfile: truncate %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("memfile: sync %s: %w", s.path, err)
	}
	s.off, s.line = at, p.line
	return nil
}

// applyDoc puts one document read from the file at off into the db.
func (s *Store) applyDoc(id string, d *anyDoc, raw []byte, bad string, off int64) {
	sp := span{off: off, n: len(raw)}
	switch {
	case bad != "":
		s.d.putInvalid(id, bytes.Clone(raw), bad, sp)
	case d.Type == state.LockDocType:
		s.d.putLock(&state.LockDoc{ID: d.ID, Rev: d.Rev, Type: state.LockDocType, User: d.User, Holder: d.Holder, Expire: d.Expire})
	default:
		t := d.Transfer
		s.d.put(&t, sp)
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
	x := newTx(s.d, rand.Uint64)
	if err := fn(x, s.now()); err != nil {
		return err
	}
	if !x.empty() {
		spans, err := s.write(x, durable)
		if err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		x.apply(spans)
	}
	due := s.snapEnd >= 0 && s.off-s.snapEnd > max(s.opts.CompactBytes, 2*s.snapEnd) && s.off >= s.noCompactBelow
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
func (s *Store) view(ctx context.Context, call string, fn func(d *db, now time.Time) error) error {
	return s.update(ctx, call, false, func(x *tx, now time.Time) error { return fn(x.d, now) })
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
	rec, spans, err := encodeBatch(docs)
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

// compact replaces the file by a snapshot of s.d. Called with the flock held.
func (s *Store) compact() error {
	start := time.Now()
	defer func() { s.stats.CompactTime += time.Since(start) }()
	var old []byte
	if s.off > 0 {
		m, err := unix.Mmap(int(s.f.Fd()), 0, int(s.off), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("map %s: %w", s.path, err)
		}
		defer unix.Munmap(m)
		old = m
	}
	f, size, at, err := writeSnapshot(s.path, s.d, old)
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
	s.f = f
	s.d.at = at
	s.off, s.snapEnd = size, size
	s.line = 1 + len(s.d.docs) + len(s.d.locks) + len(s.d.invalid)
	s.stats.Compactions++
	return nil
}
