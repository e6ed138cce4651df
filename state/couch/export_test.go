package couch

import (
	"context"
	"encoding/json"
)

// ViewsDDoc names the design document of the views (without "_design/").
const ViewsDDoc = viewsDDoc

// SetMaxWritten sets how many submitted transfers a store remembers, until
// the test ends.
func SetMaxWritten(t interface{ Cleanup(func()) }, n int) {
	old := maxWritten
	maxWritten = n
	t.Cleanup(func() { maxWritten = old })
}

// Revisions is s.revisions: the current revision of each of ids that
// exists, one _all_docs request per maxReadKeys IDs.
func Revisions(s *Store, ctx context.Context, ids []string) (map[string]string, error) {
	return s.db.revisions(ctx, ids)
}

// ReadKeys is s.readKeys: the documents of ids that exist, one _all_docs
// request per maxReadKeys IDs.
func ReadKeys(s *Store, ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	return s.resolver.readKeys(ctx, ids)
}

// MaxReadKeys is maxReadKeys.
const MaxReadKeys = maxReadKeys
