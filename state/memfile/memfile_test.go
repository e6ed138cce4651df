package memfile_test

import (
	"path/filepath"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestStore(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Factory {
		path := filepath.Join(t.TempDir(), "state.aso")
		return func(t *testing.T, cfg state.Config) state.Store {
			s, err := memfile.Open(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
