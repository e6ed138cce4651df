package couch

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Store is a state.Store on one CouchDB database. The calls of the
// contract are the methods of the types that own their state and policy,
// which Store embeds: the claims (claimer), the monitor's reads
// (activeReader), the run lock (locker), the commands' calls (admin), the
// counts (statsReader) and the operator's sweep of conflicts (resolver).
// Store's own methods are the agent's writes (store_agent.go), each a rule
// of package state per item handed to the revision-checked writer; all of
// them go through one database (db).
type Store struct {
	*claimer
	*activeReader
	*locker
	*admin
	*resolver
	statsReader
	destReader
	db     *db
	w      *writer
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
	s := &Store{db: d, statsReader: statsReader{db: d}, destReader: destReader{db: d}, agent: cfg.Agent, policy: cfg.Policy.WithDefaults(), now: cfg.Clock()}
	w := &written{}
	by := writerName(cfg.Agent)
	s.locker = &locker{db: d, now: s.now, by: by}
	s.resolver = &resolver{db: d, locks: s.locker, agent: s.agent, by: by, now: s.now}
	s.w = &writer{db: d, rv: s.resolver, written: w, now: s.now}
	s.claimer = &claimer{db: d, rv: s.resolver, w: s.w, written: w, locks: s.locker, agent: s.agent, policy: s.policy, now: s.now}
	s.activeReader = &activeReader{db: d, rv: s.resolver, written: w, cursor: &s.claimer.cursor, user: s.agent.User, now: s.now}
	s.admin = &admin{db: d, rv: s.resolver, w: s.w, by: by, now: s.now}
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
