package couch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state/couch"
)

// TestDueUsers_BeforeInit: a database whose design document predates the
// users view says to run aso init, and aso init adds the view.
func TestDueUsers_BeforeInit(t *testing.T) {
	ctx := context.Background()
	u := newDB(t)
	db := rawDB(t, u)
	ddoc := getRaw(t, db, couch.ViewsID)
	views := ddoc["views"].(map[string]any)
	delete(views, "users")
	if _, err := db.Put(ctx, couch.ViewsID, ddoc); err != nil {
		t.Fatalf("put the old design document: %v", err)
	}
	s := open(t, u, newClock(), "", "fleet", couch.Options{})
	enqueue(t, s, requests("alice", 1))
	_, err := s.DueUsers(ctx, time.Now())
	if err == nil || !strings.Contains(err.Error(), "run aso init") {
		t.Fatalf("DueUsers without the users view: %v, want an error saying to run aso init", err)
	}
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	got, err := s.DueUsers(ctx, time.Now().Add(time.Hour))
	if err != nil || len(got) != 1 || got[0].User != "alice" {
		t.Fatalf("DueUsers after aso init: %+v, %v; want alice", got, err)
	}
}
