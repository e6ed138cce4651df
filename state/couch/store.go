package couch

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Store is a state.Store on one CouchDB database. Its methods are the
// calls of the contract, each handed to the type that owns its state and
// policy: the claims (claimer), the monitor's reads (activeReader), the
// revision-checked writes (writer), the run lock (locker), the reads by ID
// that resolve conflicts (resolver), all over one database (db).
type Store struct {
	db     *db
	locks  *locker
	rv     *resolver
	w      *writer
	claims *claimer
	active *activeReader
	admin  *admin
	agent  state.Agent
	policy state.Policy
	now    func() time.Time
}

var _ state.Store = (*Store)(nil)

// Open connects to an existing database (created by Init) and binds it to
// cfg. It fails if the server cannot be reached or the database is missing.
func Open(ctx context.Context, o Options, cfg state.Config) (*Store, error) {
	d, err := openDB(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &Store{db: d, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), now: cfg.Clock()}
	w := &written{}
	s.locks = &locker{db: d, now: s.now, by: writerName(cfg.Agent)}
	s.rv = &resolver{db: d, locks: s.locks, agent: s.agent, by: s.locks.by, now: s.now}
	s.w = &writer{db: d, rv: s.rv, written: w, now: s.now}
	s.claims = &claimer{db: d, rv: s.rv, w: s.w, written: w, locks: s.locks, agent: s.agent, policy: s.policy, now: s.now}
	s.active = &activeReader{db: d, rv: s.rv, written: w, cursor: &s.claims.cursor, user: s.agent.User, now: s.now}
	s.admin = &admin{db: d, rv: s.rv, w: s.w, by: s.locks.by, now: s.now}
	return s, nil
}

// writerName names the writer of admin changes in history entries.
func writerName(a state.Agent) string {
	if a.Owner != "" {
		return a.Owner
	}
	return "aso"
}

// Checked returns what opening the database learnt of it, for another
// process to open it without asking again (Options.Checked).
func (s *Store) Checked() Checked { return Checked{ReadQuorum: s.db.readQuorum} }

// Close releases the client's connections.
func (s *Store) Close() error { return s.db.close() }
