package memfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

var (
	_ state.Store          = (*Store)(nil)
	_ state.MultiSubmitter = (*Store)(nil)
)

// DefaultCompactBytes is the journal size below which a file is never compacted.
const DefaultCompactBytes = 4 << 20

// Options tune a Store beyond its state.Config.
type Options struct {
	// Warn receives warnings, such as a torn last record that was dropped.
	// nil discards them.
	Warn func(msg string)
	// CompactBytes: the journal is compacted once it is larger than both this
	// and the snapshot (0: DefaultCompactBytes).
	CompactBytes int64
}

// Stats counts what a Store did, for benchmarks.
type Stats struct {
	Fsyncs         int64 // fsyncs of the state file
	JournalRecords int64 // records appended by this handle
	Compactions    int64 // compactions done by this handle
	Reloads        int64 // full re-reads after another handle compacted the file
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
	d       *db
	stats   Stats
	closed  bool
	body    bytes.Buffer // the record being written, kept between writes
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
	if err := s.lock(); err != nil {
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
func (s *Store) lock() error {
	for {
		if err := unix.Flock(int(s.f.Fd()), unix.LOCK_EX); err != nil {
			return fmt.Errorf("memfile: lock %s: %w", s.path, err)
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
	buf := make([]byte, size-s.off)
	if _, err := s.f.ReadAt(buf, s.off); err != nil {
		return fmt.Errorf("memfile: read %s: %w", s.path, err)
	}
	p := &parser{path: s.path, buf: buf, base: s.off, line: s.line}
	if s.off == 0 {
		if err := s.readHeader(p); err != nil || p.pos == 0 {
			return err
		}
	}
	for p.pos < len(buf) {
		batch := bytes.HasPrefix(buf[p.pos:], batchPrefix)
		next, lines, err := p.record(s.applyDoc)
		if errors.Is(err, errTorn) {
			return s.dropTorn(p)
		}
		if err != nil {
			return err
		}
		if batch && s.snapEnd < 0 {
			s.snapEnd = p.base + int64(p.pos)
		}
		p.pos, p.line = next, p.line+lines
	}
	s.off, s.line = size, p.line
	return nil
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

// applyDoc puts one document read from the file into the db.
func (s *Store) applyDoc(id string, d *anyDoc, raw []byte, bad string) {
	switch {
	case bad != "":
		s.d.putInvalid(id, bytes.Clone(raw), bad)
	case d.Type == lockType:
		delete(s.d.invalid, id)
		s.d.putLock(&lockDoc{ID: d.ID, Rev: d.Rev, Type: lockType, User: d.User, Holder: d.Holder, Expire: d.Expire})
	default:
		t := d.Transfer
		s.d.put(&t)
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
	if err := s.lock(); err != nil {
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
		if err := s.write(x, durable); err != nil {
			return fmt.Errorf("memfile: %s: %w", call, err)
		}
		x.apply()
	}
	if len(compact) > 0 || s.snapEnd >= 0 && s.off-s.snapEnd > max(s.opts.CompactBytes, s.snapEnd) {
		if err := s.compact(); err != nil {
			if len(compact) > 0 {
				return fmt.Errorf("memfile: compact %s: %w", s.path, err)
			}
			s.warn("memfile: compact %s: %v (the journal keeps growing)", s.path, err)
		}
	}
	return nil
}

// view runs fn on the current state under the file lock.
func (s *Store) view(ctx context.Context, call string, fn func(d *db, now time.Time) error) error {
	return s.update(ctx, call, false, func(x *tx, now time.Time) error { return fn(x.d, now) })
}

// maxKeptBuffer bounds the record buffer a Store keeps between writes.
const maxKeptBuffer = 8 << 20

// write appends the staged documents of x as one record.
func (s *Store) write(x *tx, durable bool) error {
	body := &s.body
	body.Reset()
	enc := json.NewEncoder(body) // Encode ends each document with a newline, as a record needs
	for _, id := range x.order {
		var v any = x.locks[id]
		if t, ok := x.docs[id]; ok {
			v = t
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	defer func() {
		if body.Cap() > maxKeptBuffer {
			*body = bytes.Buffer{}
		}
	}()
	head := batchRecord(len(x.order), body.Bytes())
	n, err := unix.Pwritev(int(s.f.Fd()), [][]byte{head, body.Bytes()}, s.off)
	if err == nil && n != len(head)+body.Len() {
		err = io.ErrShortWrite
	}
	if err != nil {
		_ = s.f.Truncate(s.off)
		return err
	}
	if durable {
		if err := unix.Fdatasync(int(s.f.Fd())); err != nil {
			_ = s.f.Truncate(s.off)
			return err
		}
		s.stats.Fsyncs++
	}
	if s.snapEnd < 0 {
		s.snapEnd = s.off
	}
	s.off += int64(n)
	s.line += 1 + len(x.order)
	s.stats.JournalRecords++
	return nil
}

// compact replaces the file by a snapshot of s.d. Called with the flock held.
func (s *Store) compact() error {
	f, size, err := writeSnapshot(s.path, s.d)
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
	s.off, s.snapEnd = size, size
	s.line = 1 + len(s.d.docs) + len(s.d.locks) + len(s.d.invalid)
	s.stats.Compactions++
	return nil
}
