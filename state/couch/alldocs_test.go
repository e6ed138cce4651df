package couch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestServer_AllDocsByKeys: _all_docs with keys answers as CouchDB does,
// with and without the documents: a row per key in the order of the keys
// (a repeated key twice), the winning revision of a conflicted document, a
// deleted document with deleted: true (and a null doc), a missing one as
// not_found. The store's reads by ID and the monitor's revision check rely
// on these rows; the test server answers them its own way (alldocs.js).
func TestServer_AllDocsByKeys(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	db := rawDB(t, u)
	put := func(doc map[string]any) string {
		t.Helper()
		rev, err := db.Put(ctx, doc["_id"].(string), doc)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	rev := put(map[string]any{"_id": "a", "n": 1})
	liveRev := put(map[string]any{"_id": "a", "_rev": rev, "n": 2})
	gone := put(map[string]any{"_id": "d", "n": 1})
	goneRev, err := db.Delete(ctx, "d", gone)
	if err != nil {
		t.Fatal(err)
	}
	// two leaves of c, written as a replication would
	leaves := []any{
		map[string]any{"_id": "c", "_rev": "2-aaaa", "n": 1, "_revisions": map[string]any{"start": 2, "ids": []string{"aaaa", "0000"}}},
		map[string]any{"_id": "c", "_rev": "2-ffff", "n": 2, "_revisions": map[string]any{"start": 2, "ids": []string{"ffff", "0000"}}},
	}
	if _, err := db.BulkDocs(ctx, leaves, kivik.Param("new_edits", false)); err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := db.Get(ctx, "c").ScanDoc(&c); err != nil {
		t.Fatal(err)
	}
	winner := c["_rev"].(string)
	if winner != "2-ffff" {
		t.Fatalf("the winner of c is %s; CouchDB picks the greater revision, 2-ffff", winner)
	}

	keys := []string{"a", "d", "c", "missing", "a"}
	for _, docs := range []bool{false, true} {
		q := "?include_docs=false"
		if docs {
			q = "?include_docs=true"
		}
		body, _ := json.Marshal(map[string]any{"keys": keys})
		resp, err := http.Post(u+"/_all_docs"+q, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var ans struct {
			Rows []struct {
				ID    string `json:"id"`
				Key   string `json:"key"`
				Error string `json:"error"`
				Value struct {
					Rev     string `json:"rev"`
					Deleted bool   `json:"deleted"`
				} `json:"value"`
				Doc json.RawMessage `json:"doc"`
			} `json:"rows"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("docs %v: status %d, %v", docs, resp.StatusCode, err)
		}
		if len(ans.Rows) != len(keys) {
			t.Fatalf("docs %v: %d rows for %d keys", docs, len(ans.Rows), len(keys))
		}
		want := []struct {
			id, rev string
			deleted bool
		}{{"a", liveRev, false}, {"d", goneRev, true}, {"c", winner, false}, {"", "", false}, {"a", liveRev, false}}
		for i, r := range ans.Rows {
			w := want[i]
			if r.Key != keys[i] || r.ID != w.id || r.Value.Rev != w.rev || r.Value.Deleted != w.deleted {
				t.Errorf("docs %v, row %d: %+v; want id %q rev %q deleted %v", docs, i, r, w.id, w.rev, w.deleted)
			}
			if w.id == "" && r.Error != "not_found" {
				t.Errorf("docs %v: a missing key has error %q, want not_found", docs, r.Error)
			}
			hasDoc := len(r.Doc) > 0 && string(r.Doc) != "null"
			if hasDoc != (docs && w.id != "" && !w.deleted) {
				t.Errorf("docs %v, row %d: doc %s", docs, i, r.Doc)
			}
		}
	}
}
