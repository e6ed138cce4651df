package couch

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Store is a state.Store on one CouchDB database.
type Store struct {
	db     *db
	locks  *locker
	cfg    state.Config
	now    func() time.Time
	policy state.Policy
	// written: the submitted transfers written, for the monitor's reads
	written written
	// cursor: where the next claim goes on down the queue
	cursor claimCursor
	// ident: who the credentials are, once a conflict needed it
	ident struct {
		mu    sync.Mutex
		known bool
		id    Identity
	}
}

var _ state.Store = (*Store)(nil)

// Open connects to an existing database (created by Init) and binds it to
// cfg. It fails if the server cannot be reached or the database is missing.
func Open(ctx context.Context, o Options, cfg state.Config) (*Store, error) {
	d, err := openDB(ctx, o)
	if err != nil {
		return nil, err
	}
	now, by := cfg.Clock(), writerName(cfg.Agent)
	return &Store{
		db: d, cfg: cfg, now: now, policy: cfg.Policy.WithDefaults(),
		locks: &locker{db: d, now: now, by: by},
	}, nil
}

// writerName names the writer of admin changes in history entries.
func writerName(a state.Agent) string {
	if a.Owner != "" {
		return a.Owner
	}
	return "aso"
}

// Close releases the client's connections.
func (s *Store) Close() error { return s.db.close() }

// readKeys reads transfer documents by ID (db.readKeys); conflicted
// transfers of an agent's user are resolved first (resolveConflicts), with
// one _bulk_get and one _bulk_docs for all of them, and left out if they
// cannot be.
func (s *Store) readKeys(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	out, conflicted, err := s.db.readKeys(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(conflicted) > 0 {
		if err := s.resolveConflicts(ctx, conflicted, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}
