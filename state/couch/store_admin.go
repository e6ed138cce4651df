package couch

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls of state.Admin but the run lock's (store_locks.go): the
// commands' calls (admin), the counts (statsReader) and the operator's
// resolution of conflicts (resolver.sweep).

// Enqueue stores valid requests as new transfers with one _bulk_docs.
func (s *Store) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	return s.admin.enqueue(ctx, reqs)
}

// Get returns one transfer.
func (s *Store) Get(ctx context.Context, id string) (state.Transfer, error) {
	return s.admin.get(ctx, id)
}

// List returns the transfers matching f, oldest created first (see
// admin.list).
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	return s.admin.list(ctx, f)
}

// Summary counts transfers by state, link and user (see admin.summary).
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	return s.admin.summary(ctx, o)
}

// Counts counts transfers from the views of StatsID: three queries,
// whatever the number of users and transfers (see statsReader).
func (s *Store) Counts(ctx context.Context, o state.CountsOptions) (state.Counts, error) {
	return statsReader{db: s.db}.counts(ctx, o)
}

// RequestKill asks for transfers to be killed (one bulk read, one
// _bulk_docs).
func (s *Store) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.admin.kill(ctx, ids)
}

// Retry returns terminal transfers to new (one bulk read, one _bulk_docs).
func (s *Store) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	return s.admin.retry(ctx, ids)
}

// Purge removes the terminal transfers o selects (see admin.purge).
func (s *Store) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	return s.admin.purge(ctx, o)
}

// DueUsers returns the users with work due at now in one query (see
// admin.dueUsers).
func (s *Store) DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error) {
	return s.admin.dueUsers(ctx, now)
}

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
