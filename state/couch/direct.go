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
	"strconv"

	"github.com/go-kivik/kivik/v4"
)

// direct makes the requests of the agent's hot path itself: _bulk_docs,
// and the reads of the view and of _all_docs. kivik's encoder parses and
// compacts every encoded document of a _bulk_docs body again, and its row
// reader takes a view answer apart token by token; together they cost the
// agent about a third of its CPU time. The rest (design documents, locks'
// reads, Mango, administration) stays with kivik, over the same HTTP
// client (timeouts, failover between nodes, TLS).
type direct struct {
	hc   *http.Client
	db   string // server and escaped database name, with a trailing slash
	user string
	pass string
}

func newDirect(hc *http.Client, t target) *direct {
	return &direct{hc: hc, db: t.server + url.PathEscape(t.db) + "/", user: t.user, pass: t.pass}
}

// httpError is an answer with an error status; kivik.HTTPStatus reads its
// status, and its text is kivik's ("Not Found: missing").
type httpError struct {
	status int
	reason string
}

func (e *httpError) Error() string {
	if e.reason == "" {
		return http.StatusText(e.status)
	}
	return http.StatusText(e.status) + ": " + e.reason
}

// HTTPStatus is the answer's status.
func (e *httpError) HTTPStatus() int { return e.status }

// docError is a document's refusal in a _bulk_docs answer; like kivik's,
// its text is the server's reason.
type docError struct {
	status int
	reason string
}

func (e *docError) Error() string { return e.reason }

// HTTPStatus is the status CouchDB gives the same refusal of a single
// document's write: 409 for a conflict, 403 for "forbidden" and 401 for
// "unauthorized" (validate_doc_update's refusals), 500 for any other.
func (e *docError) HTTPStatus() int { return e.status }

// netError is a request that got no answer, or an answer cut short; like
// kivik, it counts as 502 Bad Gateway (transient).
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// HTTPStatus is 502.
func (e *netError) HTTPStatus() int { return http.StatusBadGateway }

// do sends one request to path under the database and returns the answer
// of a status below 400; the caller closes its body.
func (d *direct) do(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	u := d.db + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aso")
	if d.user != "" {
		req.SetBasicAuth(d.user, d.pass)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, &netError{err: err}
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer drain(resp.Body)
	e := &httpError{status: resp.StatusCode}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		var v struct {
			Reason string `json:"reason"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v) == nil {
			e.reason = v.Reason
		}
	}
	return nil, e
}

// drain reads what is left of a body (so that its connection is reused)
// and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<16))
	_ = body.Close()
}

// readJSON decodes the whole body of resp into v.
func readJSON(resp *http.Response, v any) error {
	defer drain(resp.Body)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return &netError{err: err}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &netError{err: fmt.Errorf("answer of %s: %w", resp.Request.URL.Path, err)}
	}
	return nil
}

// bulkBody is the body of a _bulk_docs request: the documents already
// encoded are copied as they are, the others encoded.
func bulkBody(docs []any) ([]byte, error) {
	raws := make([][]byte, len(docs))
	n := len(`{"docs":[]}`) + len(docs)
	for i, d := range docs {
		switch v := d.(type) {
		case json.RawMessage:
			raws[i] = v
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			raws[i] = b
		}
		n += len(raws[i])
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"docs":[`...)
	for i, b := range raws {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	return append(buf, "]}"...), nil
}

// bulkDocs writes docs with one request and returns the per-document
// results as kivik does (a refusal as a docError, with the status of its
// error) and the answer's status.
// 417 Expectation Failed (a document refused) is an error, as with kivik.
func (d *direct) bulkDocs(ctx context.Context, docs []any) ([]kivik.BulkResult, int, error) {
	body, err := bulkBody(docs)
	if err != nil {
		return nil, 0, &httpError{status: http.StatusBadRequest, reason: err.Error()}
	}
	resp, err := d.do(ctx, http.MethodPost, "_bulk_docs", nil, body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode == http.StatusExpectationFailed {
		drain(resp.Body)
		return nil, resp.StatusCode, &httpError{status: resp.StatusCode, reason: "one or more document was rejected"}
	}
	var lines []struct {
		ID     string `json:"id"`
		Rev    string `json:"rev"`
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if err := readJSON(resp, &lines); err != nil {
		return nil, resp.StatusCode, err
	}
	out := make([]kivik.BulkResult, len(lines))
	for i, l := range lines {
		out[i] = kivik.BulkResult{ID: l.ID, Rev: l.Rev}
		switch l.Error {
		case "":
		case "conflict":
			out[i].Error = &docError{status: http.StatusConflict, reason: l.Reason}
		case "forbidden":
			out[i].Error = &docError{status: http.StatusForbidden, reason: l.Reason}
		case "unauthorized":
			out[i].Error = &docError{status: http.StatusUnauthorized, reason: l.Reason}
		default:
			out[i].Error = &docError{status: http.StatusInternalServerError, reason: l.Reason}
		}
	}
	return out, resp.StatusCode, nil
}

// jsonParams are the query parameters CouchDB reads as JSON.
var jsonParams = map[string]bool{"key": true, "keys": true, "startkey": true, "start_key": true, "endkey": true, "end_key": true}

// rows reads the rows of a view or of _all_docs at path. With "keys" in
// params it is a POST of the keys, otherwise a GET; the other parameters
// go in the query string (keys as JSON). A row without an ID (a missing
// key, a reduced row) has ID "", and a row without a document (not asked
// for, or deleted) has Doc nil.
func (d *direct) rows(ctx context.Context, path string, params map[string]any) ([]viewRow, error) {
	q := url.Values{}
	var body []byte
	for k, v := range params {
		if k == "keys" {
			b, err := json.Marshal(map[string]any{"keys": v})
			if err != nil {
				return nil, &httpError{status: http.StatusBadRequest, reason: err.Error()}
			}
			body = b
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case int:
			s = strconv.Itoa(v)
		default:
			if !jsonParams[k] {
				return nil, &httpError{status: http.StatusBadRequest, reason: fmt.Sprintf("invalid type %T for option %s", v, k)}
			}
		}
		if jsonParams[k] {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, &httpError{status: http.StatusBadRequest, reason: err.Error()}
			}
			s = string(b)
		}
		q.Set(k, s)
	}
	method := http.MethodGet
	if body != nil {
		method = http.MethodPost
	}
	resp, err := d.do(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Rows   []viewRow `json:"rows"`
		Error  string    `json:"error"`
		Reason string    `json:"reason"`
	}
	if err := readJSON(resp, &ans); err != nil {
		return nil, err
	}
	if ans.Error != "" {
		// an error after the rows began (a view that failed part way)
		return nil, &httpError{status: http.StatusInternalServerError, reason: ans.Error + ": " + ans.Reason}
	}
	for i := range ans.Rows {
		if string(ans.Rows[i].Doc) == "null" {
			ans.Rows[i].Doc = nil // a deleted document
		}
	}
	return ans.Rows, nil
}
