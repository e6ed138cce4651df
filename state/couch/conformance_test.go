package couch_test

import (
	"context"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestStore runs the conformance suite, each subtest on a fresh database.
func TestStore(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Factory {
		u := newDB(t)
		return func(t *testing.T, cfg state.Config) state.Store {
			s, err := couch.Open(context.Background(), couch.Options{URL: u}, cfg)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
	})
}
