package couch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// answer serves one canned answer and records the request it got.
type answer struct {
	status int
	body   string
	got    *http.Request
	sent   string
}

func (a *answer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.got, a.sent = r, string(b)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func bulkTo(t *testing.T, h http.Handler) *bulkHTTP {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newBulkHTTP(&http.Client{Timeout: 5 * time.Second}, target{server: srv.URL + "/", db: "aso/db", user: "admin", pass: "s3cret"})
}

// A _bulk_docs body is the documents joined, encoded ones as they are;
// the answer's status is kept (202: short of the write quorum), and each
// document's refusal is a state error.
func TestBulkHTTP_BulkDocs(t *testing.T) {
	a := &answer{status: http.StatusAccepted, body: `[{"ok":true,"id":"a","rev":"2-x"},` +
		`{"id":"b","error":"conflict","reason":"Document update conflict."},` +
		`{"id":"c","error":"forbidden","reason":"transfer c: state \"x\" is not a state"}]`}
	b := bulkTo(t, a)
	res, status, err := b.bulkDocs(context.Background(), []any{json.RawMessage(`{"_id":"a","_rev":"1-y","n":1}`), map[string]any{"_id": "b"}, map[string]string{"_id": "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusAccepted {
		t.Errorf("status %d, want 202", status)
	}
	if a.got.Method != http.MethodPost || a.got.URL.EscapedPath() != "/aso%2Fdb/_bulk_docs" {
		t.Errorf("request %s %s, want POST /aso%%2Fdb/_bulk_docs", a.got.Method, a.got.URL.EscapedPath())
	}
	if u, p, ok := a.got.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
		t.Errorf("credentials %q %q %v, want basic auth", u, p, ok)
	}
	if want := `{"docs":[{"_id":"a","_rev":"1-y","n":1},{"_id":"b"},{"_id":"c"}]}`; a.sent != want {
		t.Errorf("body %s, want %s", a.sent, want)
	}
	if len(res) != 3 || res[0].Err != nil || res[0].ID != "a" || res[0].Rev != "2-x" {
		t.Fatalf("results %+v", res)
	}
	if !errors.Is(res[1].Err, state.ErrConflict) {
		t.Errorf("conflict: %v, want state.ErrConflict", res[1].Err)
	}
	if !errors.Is(res[2].Err, state.ErrInvalid) || !strings.Contains(res[2].Err.Error(), `transfer c: state "x" is not a state`) {
		t.Errorf("refusal: %v, want state.ErrInvalid with the server's reason", res[2].Err)
	}
}

// _all_docs with keys is a POST of the keys; a key not found has no row, a
// deleted document no document.
func TestBulkHTTP_AllDocs(t *testing.T) {
	a := &answer{status: http.StatusOK, body: `{"total_rows":3,"rows":[{"id":"a","key":"a","value":{"rev":"1-x"},"doc":{"_id":"a"}},` +
		`{"key":"gone","error":"not_found"},{"id":"d","key":"d","value":{"rev":"3-z","deleted":true},"doc":null}]}`}
	b := bulkTo(t, a)
	rows, err := b.allDocs(context.Background(), []string{"a", "gone", "d"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if a.got.Method != http.MethodPost || a.sent != `{"keys":["a","gone","d"]}` || a.got.URL.RawQuery != "include_docs=true&conflicts=true" {
		t.Errorf("request %s %s?%s body %s", a.got.Method, a.got.URL.Path, a.got.URL.RawQuery, a.sent)
	}
	if len(rows) != 2 || rows[0].ID != "a" || string(rows[0].Doc) != `{"_id":"a"}` || rows[1].ID != "d" || rows[1].Doc != nil || string(rows[1].Value) != `{"rev":"3-z","deleted":true}` {
		t.Errorf("rows %+v", rows)
	}
	if _, err := b.allDocs(context.Background(), []string{"a"}, false); err != nil || a.got.URL.RawQuery != "" {
		t.Errorf("revisions only: %v, query %q", err, a.got.URL.RawQuery)
	}
}

// Errors carry the status kivik.HTTPStatus reads, so that transient()
// judges them as kivik's: the server's refusal with its reason and not
// retried, no answer or a cut answer as 502 and retried; none shows the
// password.
func TestBulkHTTP_Errors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		h         http.Handler
		status    int
		text      string
		transient bool
	}{
		{"unauthorized", &answer{status: http.StatusUnauthorized, body: `{"error":"unauthorized","reason":"Name or password is incorrect."}`},
			http.StatusUnauthorized, "Unauthorized: Name or password is incorrect.", false},
		{"rejected", &answer{status: http.StatusExpectationFailed, body: `[]`}, http.StatusExpectationFailed, "Expectation Failed", false},
		{"cut short", &answer{status: http.StatusOK, body: `[{"id":"a","rev":"1-x"},`}, http.StatusBadGateway, "unexpected end of JSON input", true},
		{"no answer", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }), http.StatusBadGateway, "EOF", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := bulkTo(t, tc.h).bulkDocs(ctx, []any{map[string]any{"_id": "a"}})
			if kivik.HTTPStatus(err) != tc.status || !strings.Contains(err.Error(), tc.text) || transient(ctx, err) != tc.transient {
				t.Errorf("got %v (status %d, transient %v); want status %d, %q, transient %v", err, kivik.HTTPStatus(err), transient(ctx, err), tc.status, tc.text, tc.transient)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%v shows the password", err)
			}
		})
	}
}
