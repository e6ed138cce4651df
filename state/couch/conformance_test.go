package couch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestStore runs the conformance suite, each subtest on a fresh database
// (prepared by the admin), with least privilege: the agents' stores are
// plain aso-agent users; enqueueing goes through an aso-producer and kill,
// retry, purge and unlock through an aso-operator (roleStore).
func TestStore(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Factory {
		u := newDB(t)
		return func(t *testing.T, cfg state.Config) state.Store {
			return openRoles(t, u, cfg)
		}
	})
}

// roleStore is the store of an aso-agent whose calls that are another
// role's go to a store of that role, as aso's commands do.
type roleStore struct {
	*couch.Store       // aso-agent
	producer, operator *couch.Store
}

// openRoles opens the role stores of roleStore on the database at u.
func openRoles(t *testing.T, u string, cfg state.Config) *roleStore {
	t.Helper()
	open := func(role string) *couch.Store {
		s, err := couch.Open(context.Background(), couch.Options{URL: couchtest.AsRole(t, u, role)}, cfg)
		if err != nil {
			t.Fatalf("Open as %s: %v", role, err)
		}
		return s
	}
	return &roleStore{Store: open(couch.RoleAgent), producer: open(couch.RoleProducer), operator: open(couch.RoleOperator)}
}

var _ state.Store = (*roleStore)(nil)

// Enqueue is the producer's.
func (r *roleStore) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	return r.producer.Enqueue(ctx, reqs)
}

// RequestKill is the operator's.
func (r *roleStore) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	return r.operator.RequestKill(ctx, ids)
}

// Retry is the operator's.
func (r *roleStore) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	return r.operator.Retry(ctx, ids)
}

// RecordVerifications is the operator's (aso verify).
func (r *roleStore) RecordVerifications(ctx context.Context, vs []state.Verification) ([]state.Result, error) {
	return r.operator.RecordVerifications(ctx, vs)
}

// Purge is the operator's.
func (r *roleStore) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	return r.operator.Purge(ctx, o)
}

// Unlock is the operator's.
func (r *roleStore) Unlock(ctx context.Context, user, holder, note string) error {
	return r.operator.Unlock(ctx, user, holder, note)
}

// Close closes the three stores.
func (r *roleStore) Close() error {
	return errors.Join(r.Store.Close(), r.producer.Close(), r.operator.Close())
}
