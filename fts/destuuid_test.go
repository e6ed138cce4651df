package fts_test

import (
	"testing"

	"github.com/asyncstageout/aso/fts"
)

// TestDestinationUUID: the dest_surl_uuid FTS computes in Python,
// uuid.uuid5(BASE_ID, "gsiftp://b.example.org/1").
func TestDestinationUUID(t *testing.T) {
	if got, want := fts.DestinationUUID("gsiftp://b.example.org/1"), "e7c3587c-0dbc-5176-82f0-467bcc256392"; got != want {
		t.Errorf("DestinationUUID = %s, want %s", got, want)
	}
}
