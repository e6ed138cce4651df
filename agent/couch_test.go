package agent_test

import (
	"context"
	"testing"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestAgent_EndToEndCouchDB runs the end-to-end scenario of
// TestAgent_EndToEnd on a CouchDB database prepared like `aso init` does.
func TestAgent_EndToEndCouchDB(t *testing.T) {
	endToEnd(t, newCouchWorld(t, endToEndSim))
}

// newCouchWorld builds a world on a CouchDB database prepared like `aso
// init` does.
func newCouchWorld(t testing.TB, simOpts ftstest.Options) *world {
	t.Helper()
	u := couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("init the database: %v", err)
	}
	return newWorldOn(t, simOpts, func(cfg state.Config) (state.Store, error) {
		return couch.Open(context.Background(), couch.Options{URL: u}, cfg)
	})
}
