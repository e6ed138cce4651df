package memfile

import (
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
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	f, err := openStateFile(path, o, cfg.Clock())
	if err != nil {
		return nil, err
	}
	by := cfg.Agent.Owner
	if by == "" {
		by = "aso"
	}
	return &Store{file: f, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), by: by}, nil
}

// Close releases the file. Later calls fail.
func (s *Store) Close() error { return s.file.close() }
