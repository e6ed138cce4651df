package state_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestTime_RefusesYearsItCannotWriteBack: a timestamp whose UTC year has
// no 4-digit form would be written back in a form that no longer reads.
func TestTime_RefusesYearsItCannotWriteBack(t *testing.T) {
	for _, in := range []string{`"9999-12-31T23:59:59-01:00"`, `"0000-01-01T00:00:00+01:00"`} {
		var tm state.Time
		err := tm.UnmarshalJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "outside 0000-9999") {
			t.Errorf("%s: err %v, want the year refused (it would be written as %q)", in, err, tm.String())
		}
	}
	var tm state.Time
	if err := tm.UnmarshalJSON([]byte(`"9999-12-31T23:59:59+01:00"`)); err != nil {
		t.Errorf("a year-9999 time that stays in range in UTC: %v", err)
	}
}

// TestTime_RefusalNamesTheField: a bad timestamp in a document is reported
// with the field that holds it, at any depth.
func TestTime_RefusalNamesTheField(t *testing.T) {
	for doc, want := range map[string]string{
		`{"created": 12}`:                               "Transfer.created",
		`{"last_update": "yesterday"}`:                  "Transfer.last_update",
		`{"lease_expires": {}}`:                         "Transfer.lease_expires",
		`{"progress": {"updated": true}}`:               "progress.updated",
		`{"history": [{"at": "2026-13-01T00:00:00Z"}]}`: "history.at",
	} {
		var tr state.Transfer
		err := json.Unmarshal([]byte(doc), &tr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", doc, err, want)
		}
	}
}
