package couch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kivik/kivik/v4"
)

// answer serves one canned answer and records the request it got.
type answer struct {
	status int
	body   string
	got    *http.Request
	body0  string
}

func (a *answer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.got, a.body0 = r, string(b)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func directTo(t *testing.T, a http.Handler) *direct {
	t.Helper()
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return newDirect(&http.Client{Timeout: 5 * time.Second}, target{server: srv.URL + "/", db: "aso/db", user: "admin", pass: "s3cret"})
}

func TestDirect_BulkDocs(t *testing.T) {
	a := &answer{status: http.StatusAccepted, body: `[{"ok":true,"id":"a","rev":"2-x"},` +
		`{"id":"b","error":"conflict","reason":"Document update conflict."},` +
		`{"id":"c","error":"forbidden","reason":"transfer c: state \"x\" is not a state"},` +
		`{"id":"d","error":"unauthorized","reason":"log in"},{"id":"e","error":"unknown_error","reason":"boom"}]`}
	d := directTo(t, a)
	pre := json.RawMessage(`{"_id":"a","_rev":"1-y","n":1}`)
	res, status, err := d.bulkDocs(context.Background(), []any{pre, map[string]any{"_id": "b"}, map[string]string{"_id": "c"},
		map[string]string{"_id": "d"}, map[string]string{"_id": "e"}})
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusAccepted {
		t.Errorf("status %d, want 202 (kept, so that a write short of quorum is re-read)", status)
	}
	if a.got.URL.EscapedPath() != "/aso%2Fdb/_bulk_docs" || a.got.Method != http.MethodPost {
		t.Errorf("request %s %s, want POST /aso%%2Fdb/_bulk_docs", a.got.Method, a.got.URL.EscapedPath())
	}
	if u, p, ok := a.got.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
		t.Errorf("credentials %q %q %v, want basic auth", u, p, ok)
	}
	want := `{"docs":[{"_id":"a","_rev":"1-y","n":1},{"_id":"b"},{"_id":"c"},{"_id":"d"},{"_id":"e"}]}`
	if a.body0 != want {
		t.Errorf("body %s, want %s", a.body0, want)
	}
	if len(res) != 5 || res[0].Error != nil || res[0].Rev != "2-x" {
		t.Fatalf("results %+v", res)
	}
	if kivik.HTTPStatus(res[1].Error) != http.StatusConflict {
		t.Errorf("conflict has status %d, want 409", kivik.HTTPStatus(res[1].Error))
	}
	// each refusal has the status CouchDB gives the same refusal of one
	// document, and the server's reason
	for k, want := range map[int]int{2: http.StatusForbidden, 3: http.StatusUnauthorized, 4: http.StatusInternalServerError} {
		if kivik.HTTPStatus(res[k].Error) != want {
			t.Errorf("refusal %d: status %d, want %d", k, kivik.HTTPStatus(res[k].Error), want)
		}
	}
	if res[2].Error.Error() != `transfer c: state "x" is not a state` {
		t.Errorf("refusal: text %q, want the server's reason", res[2].Error)
	}
}

func TestDirect_Errors(t *testing.T) {
	ctx := context.Background()
	t.Run("unauthorized", func(t *testing.T) {
		d := directTo(t, &answer{status: http.StatusUnauthorized, body: `{"error":"unauthorized","reason":"Name or password is incorrect."}`})
		_, _, err := d.bulkDocs(ctx, []any{map[string]any{"_id": "a"}})
		if kivik.HTTPStatus(err) != http.StatusUnauthorized || err.Error() != "Unauthorized: Name or password is incorrect." {
			t.Errorf("got %v (status %d)", err, kivik.HTTPStatus(err))
		}
		if strings.Contains(err.Error(), "s3cret") || transient(ctx, err) {
			t.Errorf("%v: shows the password or is retried", err)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		d := directTo(t, &answer{status: http.StatusExpectationFailed, body: `[]`})
		if _, _, err := d.bulkDocs(ctx, []any{map[string]any{"_id": "a"}}); kivik.HTTPStatus(err) != http.StatusExpectationFailed {
			t.Errorf("417 gave %v", err)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		d := newDirect(&http.Client{Timeout: time.Second}, target{server: srv.URL + "/", db: "db", user: "admin", pass: "s3cret"})
		_, err := d.rows(ctx, "_all_docs", map[string]any{"keys": []string{"a"}})
		if err == nil || !transient(ctx, err) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("a refused connection gave %v; want a transient error without the password", err)
		}
	})
	t.Run("cut short", func(t *testing.T) {
		d := directTo(t, &answer{status: http.StatusOK, body: `{"rows":[{"id":"a","key":"a","value":{"rev":"1-x"}},`})
		if _, err := d.rows(ctx, "_all_docs", map[string]any{"keys": []string{"a"}}); err == nil || !transient(ctx, err) {
			t.Errorf("a truncated answer gave %v; want a transient error", err)
		}
	})
	t.Run("view failed part way", func(t *testing.T) {
		d := directTo(t, &answer{status: http.StatusOK, body: `{"rows":[{"id":"a","key":1,"value":null}],"error":"timeout","reason":"the shard did not answer"}`})
		if _, err := d.rows(ctx, viewPath, map[string]any{"limit": 5}); err == nil || !strings.Contains(err.Error(), "the shard did not answer") {
			t.Errorf("got %v; want the server's error", err)
		}
	})
}

func TestDirect_Rows(t *testing.T) {
	ctx := context.Background()
	a := &answer{status: http.StatusOK, body: `{"total_rows":3,"rows":[{"id":"a","key":["u","queue","k"],"value":7},` +
		`{"key":"gone","error":"not_found"},{"id":"d","key":"d","value":{"rev":"3-z","deleted":true},"doc":null}]}`}
	d := directTo(t, a)
	rows, err := d.rows(ctx, viewPath, map[string]any{"startkey": []any{"u", "queue"}, "endkey": []any{"u", "queue", map[string]any{}}, "limit": 10, "reduce": false, "stale": "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if a.got.Method != http.MethodGet || a.got.URL.EscapedPath() != "/aso%2Fdb/_design/aso-views/_view/work" {
		t.Errorf("request %s %s", a.got.Method, a.got.URL.EscapedPath())
	}
	q := a.got.URL.Query()
	if q.Get("startkey") != `["u","queue"]` || q.Get("endkey") != `["u","queue",{}]` || q.Get("limit") != "10" || q.Get("reduce") != "false" || q.Get("stale") != "ok" {
		t.Errorf("query %v", q)
	}
	if len(rows) != 3 || rows[0].ID != "a" || string(rows[0].Key) != `["u","queue","k"]` || string(rows[0].Value) != "7" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[1].ID != "" || rows[2].ID != "d" || rows[2].Doc != nil {
		t.Errorf("a missing key must have no ID and a deleted document no doc: %+v", rows[1:])
	}

	if _, err := d.rows(ctx, "_all_docs", map[string]any{"keys": []string{"a", "b"}, "include_docs": true}); err != nil {
		t.Fatal(err)
	}
	if a.got.Method != http.MethodPost || a.body0 != `{"keys":["a","b"]}` || a.got.URL.Query().Get("include_docs") != "true" || a.got.URL.Query().Has("keys") {
		t.Errorf("keys: %s %s?%s body %s; want a POST of the keys", a.got.Method, a.got.URL.Path, a.got.URL.RawQuery, a.body0)
	}
	if _, err := d.rows(ctx, viewPath, map[string]any{"limit": 1.5}); kivik.HTTPStatus(err) != http.StatusBadRequest {
		t.Errorf("an option of a type CouchDB does not take gave %v", err)
	}
}
