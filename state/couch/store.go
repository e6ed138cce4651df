package couch

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Store is a state.Store on one CouchDB database.
type Store struct {
	db     *db
	locks  *locker
	rv     *resolver
	cfg    state.Config
	now    func() time.Time
	policy state.Policy
	w      *writer
	// written: the submitted transfers written, for the monitor's reads
	written *written
	claims  *claimer
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
	locks := &locker{db: d, now: now, by: by}
	rv := &resolver{db: d, locks: locks, agent: cfg.Agent, by: by, now: now}
	w, policy := &written{}, cfg.Policy.WithDefaults()
	wr := &writer{db: d, rv: rv, written: w, now: now}
	return &Store{
		locks: locks, rv: rv, w: wr, written: w,
		claims: &claimer{db: d, rv: rv, w: wr, written: w, locks: locks, agent: cfg.Agent, policy: policy, now: now},
		db:     d, cfg: cfg, now: now, policy: policy,
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

// ResolveConflicts ends the conflicts of the database (of user's transfers
// and run lock only, when user is not ""): the leaves of a transfer that
// no resolution weighed yet are resolved first, by the agent's rules (see
// conflicts.go; ties go to the owner of the user's live run lock), with one
// write on CouchDB's winner; then every superseded leaf is deleted. A leaf
// whose resolution failed (the document changed meanwhile) is not deleted.
// A run lock's leaves are deleted unless live (held until a time to come):
// a live one is left, and said so. It is an operator's: deleting takes the
// aso-operator role. One scan of the database, then a _bulk_get and two
// _bulk_docs per resolveBatch conflicted documents.
func (s *Store) ResolveConflicts(ctx context.Context, user string) (ConflictReport, error) {
	return s.rv.sweep(ctx, user)
}
