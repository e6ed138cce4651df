package chaos_test

import (
	"os"
	"testing"

	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMain lets proctest re-execute this test binary as aso, and stops the
// CouchDB test server at the end.
func TestMain(m *testing.M) {
	proctest.Main()
	os.Exit(couchtest.Main(m))
}
