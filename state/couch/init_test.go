package couch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// designRevs returns the revision of every design document.
func designRevs(t *testing.T, db *kivik.DB) map[string]string {
	t.Helper()
	revs := map[string]string{}
	rs := db.AllDocs(context.Background(), kivik.Params(map[string]any{"startkey": "_design/", "endkey": "_design0"}))
	defer rs.Close()
	for rs.Next() {
		id, _ := rs.ID()
		var v struct {
			Rev string `json:"rev"`
		}
		if err := rs.ScanValue(&v); err != nil {
			t.Fatal(err)
		}
		revs[id] = v.Rev
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return revs
}

func TestInit(t *testing.T) {
	ctx := context.Background()
	u := couchtest.Server(t) + couchtest.NewName()
	couchtest.DropLater(t, u)
	if _, err := couch.Open(ctx, couch.Options{URL: u}, state.Config{}); err == nil {
		t.Fatal("Open of a missing database succeeded")
	}
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	db := rawDB(t, u)
	first := designRevs(t, db)
	for _, id := range []string{couch.DesignID, couch.ViewsID, "_design/aso-created"} {
		if first[id] == "" {
			t.Errorf("Init created no %s (design documents: %v)", id, first)
		}
	}

	t.Run("twice changes nothing", func(t *testing.T) {
		if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
			t.Fatalf("second Init: %v", err)
		}
		if got := designRevs(t, db); fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("second Init changed design documents: %v -> %v", first, got)
		}
	})

	t.Run("upgrade replaces an outdated validation function", func(t *testing.T) {
		old := getRaw(t, db, couch.DesignID)
		want := old["validate_doc_update"]
		old["validate_doc_update"] = "function (newDoc) {}"
		if _, err := db.Put(ctx, couch.DesignID, old); err != nil {
			t.Fatal(err)
		}
		before := designRevs(t, db)
		if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
			t.Fatalf("Init: %v", err)
		}
		after := designRevs(t, db)
		if after[couch.DesignID] == before[couch.DesignID] {
			t.Fatalf("Init left the outdated design document (rev %s)", after[couch.DesignID])
		}
		if got := getRaw(t, db, couch.DesignID)["validate_doc_update"]; got != want {
			t.Fatalf("validate_doc_update after upgrade = %.60q, want the current function", got)
		}
	})

	t.Run("upgrade replaces outdated views", func(t *testing.T) {
		old := getRaw(t, db, couch.ViewsID)
		want, _ := json.Marshal(old["views"])
		old["views"] = map[string]any{"claim": map[string]any{"map": "function (doc) { emit(doc._id, null); }"}}
		if _, err := db.Put(ctx, couch.ViewsID, old); err != nil {
			t.Fatal(err)
		}
		if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
			t.Fatalf("Init: %v", err)
		}
		if got, _ := json.Marshal(getRaw(t, db, couch.ViewsID)["views"]); string(got) != string(want) {
			t.Fatalf("views after upgrade = %.100s, want %.100s", got, want)
		}
	})
}

// TestInit_UpgradesMangoQueueIndexes starts from a database prepared by an
// earlier version, whose claim and active queries used Mango indexes, with
// a queue in it: Init deletes those indexes, and the queue is claimed in
// order through the views.
func TestInit_UpgradesMangoQueueIndexes(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	db := rawDB(t, u)
	for name, fields := range map[string][]string{
		"aso-claim":   {"user", "claim_key"},
		"aso-active":  {"user", "state", "last_update"},
		"aso-created": {"type", "created"},
	} {
		if err := db.CreateIndex(ctx, name, name, map[string]any{"fields": fields}); err != nil {
			t.Fatalf("create the old index %s: %v", name, err)
		}
	}
	c := newClock()
	reqs := requests("alice", 5)
	for i := range reqs {
		reqs[i].Priority = i % 2
	}
	for _, r := range reqs {
		tr := state.NewTransfer(r, c.Now(), "old")
		tr.Type = state.DocType
		b, _ := json.Marshal(tr)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["claim_key"] = fmt.Sprintf("%010d|%s|%s", 2147483647-tr.Priority, tr.LastUpdate, tr.ID)
		delete(m, "_id")
		if _, err := db.Put(ctx, tr.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	revs := designRevs(t, db)
	for _, gone := range []string{"_design/aso-claim", "_design/aso-active"} {
		if revs[gone] != "" {
			t.Errorf("Init left the old index %s", gone)
		}
	}
	for _, id := range []string{couch.DesignID, couch.ViewsID, "_design/aso-created"} {
		if revs[id] == "" {
			t.Errorf("no %s after the upgrade", id)
		}
	}
	s := open(t, u, c, "alice", "host:1:a", couch.Options{})
	got, err := statetest.Claim(ctx, s, 5)
	if err != nil || len(got) != 5 {
		t.Fatalf("NewTransfers after the upgrade = %d, %v", len(got), err)
	}
	for i, tr := range got {
		if want := 1; i < 2 && tr.Priority != want {
			t.Fatalf("claim %d has priority %d: the priority 1 transfers come first", i, tr.Priority)
		}
	}

}

// transferJSON returns the stored form of a valid new transfer, changed by
// edit.
func transferJSON(t *testing.T, edit func(m map[string]any)) (string, string) {
	t.Helper()
	tr := state.NewTransfer(requests("alice", 1)[0], newClock().Now(), "test")
	b, _ := json.Marshal(tr)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "_id")
	if edit != nil {
		edit(m)
	}
	b, _ = json.Marshal(m)
	return tr.ID, string(b)
}

func TestValidateDocUpdate(t *testing.T) {
	db := rawDB(t, newDB(t))
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"missing user", func(m map[string]any) { delete(m, "user") }},
		{"unknown state", func(m map[string]any) { m["state"] = "paused" }},
		{"size is a string", func(m map[string]any) { m["size"] = "big" }},
		{"negative attempts", func(m map[string]any) { m["attempts"] = -1 }},
		{"acquired without owner", func(m map[string]any) { m["state"] = "acquired" }},
		{"submitted without job", func(m map[string]any) { m["state"] = "submitted" }},
		{"relative lfn", func(m map[string]any) { m["source_lfn"] = "store/x" }},
		{"depends_on not a list", func(m map[string]any) { m["depends_on"] = "abc" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, doc := transferJSON(t, tc.edit)
			if got := putRaw(t, db, id, doc); got != http.StatusForbidden {
				t.Fatalf("malformed transfer: HTTP %d, want 403", got)
			}
		})
	}
	t.Run("other documents are not checked", func(t *testing.T) {
		if got := putRaw(t, db, "config", `{"type":"settings","x":1}`); got != http.StatusCreated {
			t.Fatalf("HTTP %d, want 201", got)
		}
	})
	t.Run("illegal transitions", func(t *testing.T) {
		id, doc := transferJSON(t, func(m map[string]any) { m["state"] = "done" })
		if got := putRaw(t, db, id, doc); got != http.StatusCreated {
			t.Fatalf("create done transfer: HTTP %d", got)
		}
		m := getRaw(t, db, id)
		m["state"], m["owner"], m["lease_expires"] = "acquired", "x", "2030-01-01T00:00:00.000000Z"
		if _, err := db.Put(context.Background(), id, m); kivik.HTTPStatus(err) != http.StatusForbidden {
			t.Fatalf("done -> acquired: %v, want 403", err)
		}
		m = getRaw(t, db, id)
		m["state"] = "new"
		if _, err := db.Put(context.Background(), id, m); kivik.HTTPStatus(err) != http.StatusForbidden {
			t.Fatalf("done -> new without a retry entry: %v, want 403", err)
		}
		m["user"] = "mallory"
		m["state"] = "done"
		if _, err := db.Put(context.Background(), id, m); kivik.HTTPStatus(err) != http.StatusForbidden {
			t.Fatalf("changing user: %v, want 403", err)
		}
	})
}
