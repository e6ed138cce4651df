package chaos_test

import (
	"os"
	"testing"

	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMain stops the CouchDB test server and removes the aso binary of the
// agents at the end.
func TestMain(m *testing.M) {
	code := couchtest.Main(m)
	proctest.Cleanup()
	os.Exit(code)
}
