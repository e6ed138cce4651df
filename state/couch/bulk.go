package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// bulkHTTP makes the store's bulk calls, _bulk_docs and POST _all_docs
// with keys, over the HTTP client kivik uses (the same timeouts, node
// failover, TLS and credentials): a _bulk_docs body is the encoded
// documents joined, where kivik would parse and compact each again, and an
// answer is decoded in one pass, where kivik reads it row by row: measured
// on the 10,000 bench when the bulk calls once moved into kivik, the
// agent's CPU time rose by about a third, and they moved back here. Every
// other request is kivik's.
type bulkHTTP struct {
	hc         *http.Client
	db         string // server and escaped database name, with a trailing slash
	user, pass string
}

func newBulkHTTP(hc *http.Client, t target) *bulkHTTP {
	return &bulkHTTP{hc: hc, db: t.server + url.PathEscape(t.db) + "/", user: t.user, pass: t.pass}
}

// docResult is the outcome of one document of a _bulk_docs: its new
// revision, or its refusal (see docError).
type docResult struct {
	ID, Rev string
	Err     error
}

// docError is the one place where a document's refusal in a _bulk_docs
// answer (the error and reason of its line) becomes a state error: a
// conflict wraps state.ErrConflict, any other refusal (validate_doc_update's
// forbidden or unauthorized) state.ErrInvalid, with the server's reason and
// the status CouchDB gives the same refusal of a single document's write
// (409, 403, 401, else 500), which kivik.HTTPStatus and Denied read.
func docError(name, reason string) error {
	switch name {
	case "":
		return nil
	case "conflict":
		return &refusal{http.StatusConflict, reason, state.ErrConflict}
	case "forbidden":
		return &refusal{http.StatusForbidden, reason, state.ErrInvalid}
	case "unauthorized":
		return &refusal{http.StatusUnauthorized, reason, state.ErrInvalid}
	default:
		return &refusal{http.StatusInternalServerError, reason, state.ErrInvalid}
	}
}

// refusal is a document's refusal in a _bulk_docs answer (see docError).
type refusal struct {
	status int
	reason string
	is     error // state.ErrConflict or state.ErrInvalid
}

func (e *refusal) Error() string   { return e.reason + ": " + e.is.Error() }
func (e *refusal) Unwrap() error   { return e.is }
func (e *refusal) HTTPStatus() int { return e.status }

// statusError is a bulk call that failed: the status of its answer, or 502
// Bad Gateway when there was no whole answer. kivik.HTTPStatus reads it,
// so that transient() judges it as it judges kivik's errors.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string   { return e.err.Error() }
func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) HTTPStatus() int { return e.status }

// post sends body to path (with query) and decodes the answer into v; it
// returns the answer's status.
func (b *bulkHTTP) post(ctx context.Context, path, query string, body []byte, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.db+path+query, bytes.NewReader(body))
	if err != nil {
		return 0, &statusError{status: http.StatusBadRequest, err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aso")
	if b.user != "" {
		req.SetBasicAuth(b.user, b.pass)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, &statusError{status: http.StatusBadGateway, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, &statusError{status: http.StatusBadGateway, err: fmt.Errorf("answer of %s: %w", path, err)}
	}
	if resp.StatusCode >= 400 {
		var e struct{ Reason string }
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
			_ = json.Unmarshal(raw, &e)
		}
		return resp.StatusCode, &statusError{status: resp.StatusCode, err: fmt.Errorf("%s", strings.TrimSuffix(http.StatusText(resp.StatusCode)+": "+e.Reason, ": "))}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return resp.StatusCode, &statusError{status: http.StatusBadGateway, err: fmt.Errorf("answer of %s: %w", path, err)}
	}
	return resp.StatusCode, nil
}

// bulkDocs writes docs (json.RawMessage as it is, anything else encoded)
// with one _bulk_docs and returns the per-document results in the order
// the server gave them, and the answer's status.
func (b *bulkHTTP) bulkDocs(ctx context.Context, docs []any) ([]docResult, int, error) {
	raws := make([][]byte, len(docs))
	n := len(`{"docs":[]}`) + len(docs)
	for i, d := range docs {
		raw, ok := d.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(d); err != nil {
				return nil, 0, &statusError{status: http.StatusBadRequest, err: err}
			}
		}
		raws[i], n = raw, n+len(raw)
	}
	body := append(make([]byte, 0, n), `{"docs":[`...)
	for i, raw := range raws {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, raw...)
	}
	body = append(body, "]}"...)
	var lines []struct{ ID, Rev, Error, Reason string }
	status, err := b.post(ctx, "_bulk_docs", "", body, &lines)
	if err != nil {
		return nil, status, err
	}
	out := make([]docResult, len(lines))
	for i, l := range lines {
		out[i] = docResult{ID: l.ID, Rev: l.Rev, Err: docError(l.Error, l.Reason)}
	}
	return out, status, nil
}

// allDocs reads the rows of _all_docs for keys, with the documents and
// their conflicts if docs. A key not found has no row; a deleted document
// has Doc nil.
func (b *bulkHTTP) allDocs(ctx context.Context, keys []string, docs bool) ([]viewRow, error) {
	body, err := json.Marshal(map[string][]string{"keys": keys})
	if err != nil {
		return nil, &statusError{status: http.StatusBadRequest, err: err}
	}
	query := ""
	if docs {
		query = "?include_docs=true&conflicts=true"
	}
	var ans struct{ Rows []viewRow }
	if _, err := b.post(ctx, "_all_docs", query, body, &ans); err != nil {
		return nil, err
	}
	rows := ans.Rows[:0]
	for _, r := range ans.Rows {
		if r.ID == "" {
			continue // not found
		}
		if string(r.Doc) == "null" {
			r.Doc = nil
		}
		rows = append(rows, r)
	}
	return rows, nil
}
