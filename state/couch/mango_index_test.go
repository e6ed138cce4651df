package couch_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMangoIndex_BuiltLater: POST /_index on a database that already
// holds documents answers once the index is defined, as CouchDB does,
// without building the index over those documents: a _find with
// "update": false right after it (which reads the index as it is) finds
// nothing on the test server, which builds the index at its first read,
// and at most the matching documents on a real CouchDB, which may have
// begun building it in the background. The first _find that updates the
// index returns every matching document, in the index's order.
func TestMangoIndex_BuiltLater(t *testing.T) {
	u := couchtest.DB(t)
	const n, users = 5000, 10
	docs := make([]map[string]any, n)
	var want []string // the documents of user u3, by created
	for i := range docs {
		id := fmt.Sprintf("d%05d", i)
		docs[i] = map[string]any{"_id": id, "type": "transfer", "user": fmt.Sprintf("u%d", i%users), "created": n - i}
		if i%users == 3 {
			want = append(want, id)
		}
	}
	slices.Reverse(want)
	var bulk []struct{ Error string }
	postJSON(t, u+"/_bulk_docs", map[string]any{"docs": docs}, http.StatusCreated, &bulk)
	for _, r := range bulk {
		if r.Error != "" {
			t.Fatalf("bulk write: %s", r.Error)
		}
	}

	def := map[string]any{"index": map[string]any{"fields": []string{"user", "created"}}, "ddoc": "by-user", "name": "by-user", "type": "json"}
	for _, result := range []string{"created", "exists"} {
		var got map[string]string
		postJSON(t, u+"/_index", def, http.StatusOK, &got)
		if w := map[string]string{"result": result, "id": "_design/by-user", "name": "by-user"}; !maps.Equal(got, w) {
			t.Fatalf("POST /_index = %v, want %v", got, w)
		}
	}

	find := func(update bool) []string {
		t.Helper()
		q := map[string]any{
			"selector":  map[string]any{"user": "u3"},
			"sort":      []map[string]string{{"user": "asc"}, {"created": "asc"}},
			"use_index": []string{"by-user", "by-user"},
			"limit":     n,
			"update":    update,
		}
		var ans struct {
			Docs []struct {
				ID   string `json:"_id"`
				User string `json:"user"`
			} `json:"docs"`
		}
		postJSON(t, u+"/_find", q, http.StatusOK, &ans)
		ids := make([]string, len(ans.Docs))
		for i, d := range ans.Docs {
			if d.User != "u3" {
				t.Fatalf("_find returned %s of user %q", d.ID, d.User)
			}
			ids[i] = d.ID
		}
		return ids
	}

	stale := find(false)
	if couchtest.Real() {
		if len(stale) > len(want) {
			t.Fatalf("_find update=false before the first read: %d documents, want at most %d", len(stale), len(want))
		}
	} else if len(stale) != 0 {
		t.Fatalf("_find update=false right after POST /_index: %d documents, want none (the POST built the index)", len(stale))
	}
	if got := find(true); !slices.Equal(got, want) {
		t.Fatalf("first _find: %d documents %v..., want %d %v...", len(got), head(got), len(want), head(want))
	}
	if got := find(false); !slices.Equal(got, want) {
		t.Fatalf("_find update=false after the first read: %d documents, want %d", len(got), len(want))
	}
}

// postJSON posts body as JSON to u, wants status, and decodes the answer
// into out.
func postJSON(t testing.TB, u string, body any, status int, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("POST %s: HTTP %d, want %d: %s", couchtest.WithoutAuth(u), resp.StatusCode, status, rb)
	}
	if err := json.Unmarshal(rb, out); err != nil {
		t.Fatalf("POST %s: %v: %s", couchtest.WithoutAuth(u), err, rb)
	}
}

func head(ids []string) []string { return ids[:min(3, len(ids))] }
