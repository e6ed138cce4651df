package couch_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// TestStore_AdminCallsTouchOnlyTransfers: aso kill and aso retry take IDs
// from the command line. Given the IDs of the design document, a run
// lock, a foreign document and names with path syntax, each item fails and
// no document is written.
func TestStore_AdminCallsTouchOnlyTransfers(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	db := rawDB(t, u)
	s := open(t, u, c, "alice", "host:1:a", couch.Options{})
	if _, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := putRaw(t, db, "invoice-7", `{"type":"invoice","user":"alice","state":"new"}`); got != http.StatusCreated {
		t.Fatalf("put foreign document: HTTP %d", got)
	}
	ids := []string{couch.DesignID, state.LockID("alice"), "invoice-7", "../" + couch.DesignID, "_all_docs", "invoice-7?rev=1", ""}
	revs := map[string]string{}
	for _, id := range ids[:3] {
		revs[id] = getRaw(t, db, id)["_rev"].(string)
	}
	for name, call := range map[string]func(context.Context, []string) ([]state.Result, error){"RequestKill": s.RequestKill, "Retry": s.Retry} {
		res, err := call(ctx, ids)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, r := range res {
			if r.Err == nil {
				t.Errorf("%s(%q) succeeded", name, ids[i])
			}
		}
	}
	for id, rev := range revs {
		if got := getRaw(t, db, id)["_rev"]; got != rev {
			t.Errorf("%s was written: rev %v, was %s", id, got, rev)
		}
	}
}
