package memfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/asyncstageout/aso/state"
)

var _ state.Store = (*Store)(nil)

// Store is a state.Store on one file. It is safe for concurrent use, and
// several Stores (in one or several processes) may share the file.
//
// Its methods are the calls of the contract and nothing else: each runs
// as one operation of its file handle, with the rules of package state
// applied by the claim (claimer), the reads (query) or the staged writes
// (tx). Stats and Compact are the handle's.
type Store struct {
	*file
	agent  state.Agent
	policy state.Policy
	by     string // who the history of an admin change names
}

// Options tune a Store beyond its state.Config.
type Options struct {
	// Warn receives warnings: an incomplete last record that was dropped
	// (a crash during an append), a compaction that failed. nil discards
	// them.
	Warn func(msg string)
	// CompactBytes: the file is compacted once the versions it holds that
	// are no longer current take more than both this and twice the
	// current ones (0: DefaultCompactBytes).
	CompactBytes int64
	// Create creates the file and its directory when missing, and makes a
	// store of an empty file (see Open). Without it, a missing file is an
	// error wrapping ErrNoStore, and so is an empty one: nothing is
	// created.
	Create bool
	// ReadOnly opens the file for reading only: the file is never changed
	// (an incomplete last record is skipped, not cut off), a file without
	// write permission can be read, and every call that would write fails
	// with ErrReadOnly.
	ReadOnly bool
	// LockWait bounds how long Open waits for the file's lock while
	// another process holds it (0: DefaultLockWait): a holder that hangs,
	// or was stopped in the middle of a write, must not block every later
	// run at its start.
	LockWait time.Duration
	// Damaged, if set, is told the error of the first call of an open
	// store that finds damage appended since it was opened (the call
	// itself fails with it, as every later one does), so that a long
	// run can stop at once instead of retrying a file it must not write.
	Damaged func(error)
}

// Defaults of Options.
const (
	DefaultCompactBytes = 4 << 20
	DefaultLockWait     = 2 * time.Minute
)

var (
	// ErrNoStore is wrapped by the error of opening a state file that does
	// not exist, or is empty, without Options.Create: nothing is created
	// (see Create). It wraps fs.ErrNotExist.
	ErrNoStore error = noStore{}
	// ErrNotStateFile is wrapped by the error of opening a file that is not
	// an aso state file (another program's file, named by mistake).
	ErrNotStateFile = errors.New("not an aso state file")
	// ErrDamaged is wrapped by the error of a state file that cannot be
	// read past some damage: a record that is complete but fails its
	// checksum, a bad record header, bytes that are not a record. No call
	// writes to such a file. Check lists the damage and Salvage writes what
	// can be read into a new file.
	ErrDamaged = errors.New("the state file is damaged")
	// ErrReadOnly is the error of a write to a Store opened with ReadOnly.
	ErrReadOnly = errors.New("the state file is open read-only")
)

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
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
	f, err := openFile(path, o, cfg.Clock())
	if err != nil {
		return nil, err
	}
	return &Store{file: f, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), by: cmp.Or(cfg.Agent.Owner, "aso")}, nil
}

// Close releases the file. Later calls fail.
func (s *Store) Close() error { return s.file.close() }

// Create makes a state file at path, and its directory, unless a store is
// there; created says whether it made one. An empty file there (a
// creation cut short) becomes a store. Either way it then opens the file
// once, so that a file that is not a state file, or is damaged, is an
// error. It is idempotent.
func Create(path string) (created bool, err error) {
	fi, err := os.Stat(path)
	created = errors.Is(err, fs.ErrNotExist) || err == nil && fi.Size() == 0
	s, err := OpenOptions(path, state.Config{}, Options{Create: true})
	if err != nil {
		return false, err
	}
	return created, s.Close()
}

// osOpen opens the state file for reading only or for reading and
// writing. A missing file is ErrNoStore, unless o.Create (and not
// o.ReadOnly): then it and its directory are created.
func osOpen(path string, o Options) (*os.File, error) {
	flags := os.O_RDWR
	switch {
	case o.ReadOnly:
		flags = os.O_RDONLY
	case o.Create:
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("memfile: open %s: %w", path, err)
		}
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("memfile: %s: %w", path, ErrNoStore)
	}
	if err != nil {
		return nil, fmt.Errorf("memfile: open %s: %w", path, err)
	}
	return f, nil
}

// noStore is ErrNoStore: it is fs.ErrNotExist for errors.Is, but says
// only what is missing.
type noStore struct{}

func (noStore) Error() string        { return "no such state file" }
func (noStore) Is(target error) bool { return target == fs.ErrNotExist }

// emptyFile is the error of a file that exists but is empty: ErrNoStore,
// with a message that does not call it missing.
type emptyFile struct{ msg string }

func (e emptyFile) Error() string { return e.msg }
func (e emptyFile) Unwrap() error { return ErrNoStore }
