package couchtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Cluster is a proxy in front of one database of the test server that
// answers as two coordinator nodes of a CouchDB cluster (n=3, w=2) do when
// their replicas do not see each other's writes in time:
//
//   - Split: for Window after a document is written through one front, a
//     read of it through the other front (GET of the document, POST
//     _all_docs with keys) returns the version that front saw last (or "not
//     found" if it never saw one), and a write through the other front
//     made on that stale revision is not refused with 409 but stored as a
//     conflicting leaf revision and answered 202 Accepted, as a cluster
//     does when the write reached fewer replicas than the quorum.
//   - Accept202: every _bulk_docs is answered 202 instead of 201 (applied
//     normally).
//   - Lost: a document of a _bulk_docs that Lost selects is not stored
//     though it is answered ok with a revision and 202, as a write that
//     reached one replica, which died before it passed the write on.
//   - ViewLag: a view query without include_docs is answered from the
//     answer to the same query through the same front if that is younger
//     than ViewLag, as a view built on another shard copy lags behind the
//     writes (the documents of include_docs are read from a quorum when
//     the query runs, so those queries are answered current).
//
// Writes made directly to the test server are seen by both fronts at once.
type Cluster struct {
	upstream *url.URL // the database URL, with credentials
	fronts   [2]*httptest.Server
	client   *http.Client

	// Split turns on the split (on by default).
	Split atomic.Bool
	// Accept202 answers every _bulk_docs 202.
	Accept202 atomic.Bool
	// Accept202Next answers this many of the next _bulk_docs 202 (each
	// one it answers so counts it down).
	Accept202Next atomic.Int64
	// ViewLag, when > 0, delays view answers (a time.Duration).
	ViewLag atomic.Int64
	// ScanLag, when > 0, delays the answers of a scan of _all_docs
	// (without keys) as ViewLag delays views: a scan reads one copy of
	// each shard.
	ScanLag atomic.Int64
	// Branched counts the writes stored as conflicting revisions.
	Branched atomic.Int64
	// Lost, when set (before use), selects the documents of a _bulk_docs
	// that are answered ok (202) but never stored.
	Lost func(doc map[string]any) bool
	// Sibling, when set (before use), makes every write through a front
	// that the test server accepts a conflict as well: the proxy also
	// stores Sibling(doc) on the same parent revision, as another
	// coordinator that accepted a different write of the revision would,
	// and answers 202. A nil Sibling(doc) leaves doc alone.
	Sibling func(doc map[string]any) map[string]any

	mu     sync.Mutex
	window time.Duration
	last   map[string]write          // document ID -> its last write through a front
	forked map[string]bool           // documents with a conflicting leaf made here
	seen   [2]map[string][]byte      // per front: document ID -> body last seen (nil: missing)
	views  [2]map[string]cachedReply // per front: query -> answer
}

type write struct {
	front int
	at    time.Time
}

type cachedReply struct {
	at     time.Time
	status int
	body   []byte
}

// NewCluster starts the two fronts of a Cluster in front of the database
// at dbURL (as DB returns it); Window is how long a write stays invisible
// to the other front.
func NewCluster(t testing.TB, dbURL string, window time.Duration) *Cluster {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("couchtest: cluster: %v", err)
	}
	c := &Cluster{upstream: u, client: &http.Client{Timeout: 30 * time.Second}, window: window, last: map[string]write{}, forked: map[string]bool{}}
	c.Split.Store(true)
	for i := range c.fronts {
		c.seen[i], c.views[i] = map[string][]byte{}, map[string]cachedReply{}
		front := i
		c.fronts[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.serve(front, w, r) }))
		t.Cleanup(c.fronts[i].Close)
	}
	return c
}

// URL returns the database URL through front i (0 or 1), with the
// database's credentials.
func (c *Cluster) URL(i int) string {
	f, _ := url.Parse(c.fronts[i].URL)
	f.Path = c.upstream.Path
	f.User = c.upstream.User
	return f.String()
}

// Met returns the moment every write made so far is seen through both
// fronts: the last write's time plus the window.
func (c *Cluster) Met() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, w := range c.last {
		if w.at.After(at) {
			at = w.at
		}
	}
	return at.Add(c.window)
}

// serve handles one request through front.
func (c *Cluster) serve(front int, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	dbPath := strings.TrimRight(c.upstream.Path, "/")
	rest, ok := strings.CutPrefix(r.URL.Path, dbPath)
	switch {
	case !ok:
	case r.Method == http.MethodPost && rest == "/_bulk_docs" && r.URL.Query().Get("new_edits") != "false":
		c.bulkDocs(front, w, r, body)
		return
	case r.Method == http.MethodGet && rest == "/_all_docs":
		c.lagged(front, w, r, body, time.Duration(c.ScanLag.Load()))
		return
	case r.Method == http.MethodPost && rest == "/_all_docs":
		status, out, h := c.forward(r, body)
		c.reply(w, status, h, c.staleRows(front, out))
		return
	case r.Method == http.MethodGet && strings.Count(rest, "/") == 1 && len(rest) > 1 && rest[1] != '_' && r.URL.Query().Get("rev") == "":
		c.getDoc(front, w, r, body, rest[1:])
		return
	case strings.Contains(rest, "/_view/"):
		c.view(front, w, r, body)
		return
	}
	status, out, h := c.forward(r, body)
	c.reply(w, status, h, out)
}

// forward sends r (with body) to the test server.
func (c *Cluster) forward(r *http.Request, body []byte) (int, []byte, http.Header) {
	u := *c.upstream
	u.User = nil
	u.Path, u.RawPath = r.URL.Path, r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway, []byte(`{"error":"proxy"}`), nil
	}
	req.Header = r.Header.Clone()
	resp, err := c.client.Do(req)
	if err != nil {
		return http.StatusBadGateway, []byte(`{"error":"proxy","reason":"` + err.Error() + `"}`), nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}

func (c *Cluster) reply(w http.ResponseWriter, status int, h http.Header, body []byte) {
	for k, v := range h {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// hidden reports whether the last write of id is invisible to front. Once
// a document has conflicting leaves, every read sees them: a quorum read
// meets at least one replica of each of two writes that both reached a
// replica.
func (c *Cluster) hidden(front int, id string) bool {
	l, ok := c.last[id]
	return c.Split.Load() && ok && l.front != front && time.Since(l.at) < c.window && !c.forked[id]
}

// stale reports whether a write through front conflicted only because it
// was made on a revision the other front replaced within the window.
func (c *Cluster) stale(front int, id string) bool {
	l, ok := c.last[id]
	return c.Split.Load() && ok && l.front != front && time.Since(l.at) < c.window
}

// getDoc serves GET of one document through front.
func (c *Cluster) getDoc(front int, w http.ResponseWriter, r *http.Request, body []byte, escID string) {
	id, _ := url.PathUnescape(escID)
	status, out, h := c.forward(r, body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hidden(front, id) {
		old := c.seen[front][id]
		if old == nil {
			c.reply(w, http.StatusNotFound, nil, []byte(`{"error":"not_found","reason":"missing"}`))
			return
		}
		c.reply(w, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, old)
		return
	}
	if status == http.StatusOK {
		c.seen[front][id] = out
	} else if status == http.StatusNotFound {
		c.seen[front][id] = nil
	}
	c.reply(w, status, h, out)
}

// staleRows rewrites an _all_docs answer as front sees it.
func (c *Cluster) staleRows(front int, out []byte) []byte {
	var ans struct {
		TotalRows int               `json:"total_rows"`
		Offset    int               `json:"offset"`
		Rows      []json.RawMessage `json:"rows"`
	}
	if json.Unmarshal(out, &ans) != nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, raw := range ans.Rows {
		var row struct {
			ID  string          `json:"id"`
			Key string          `json:"key"`
			Doc json.RawMessage `json:"doc"`
		}
		if json.Unmarshal(raw, &row) != nil {
			continue
		}
		id := row.Key
		if c.hidden(front, id) {
			old := c.seen[front][id]
			if old == nil {
				ans.Rows[k], _ = json.Marshal(map[string]any{"key": id, "error": "not_found"})
				continue
			}
			var e struct {
				Rev string `json:"_rev"`
			}
			_ = json.Unmarshal(old, &e)
			ans.Rows[k], _ = json.Marshal(map[string]any{"id": id, "key": id, "value": map[string]any{"rev": e.Rev}, "doc": old})
			continue
		}
		if len(row.Doc) > 0 && string(row.Doc) != "null" {
			c.seen[front][id] = row.Doc
		} else if row.ID == "" {
			c.seen[front][id] = nil
		}
	}
	b, err := json.Marshal(ans)
	if err != nil {
		return out
	}
	return b
}

// bulkDocs serves a _bulk_docs through front.
func (c *Cluster) bulkDocs(front int, w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Docs []map[string]any `json:"docs"`
	}
	if json.Unmarshal(body, &req) == nil && c.Split.Load() {
		c.keepBefore(r, 1-front, req.Docs)
	}
	body, lost := c.lose(req.Docs, body)
	status, out, h := c.forward(r, body)
	if len(lost) > 0 && (status == http.StatusCreated || status == http.StatusAccepted) {
		var res []map[string]any
		if json.Unmarshal(out, &res) == nil {
			out, _ = json.Marshal(append(res, lost...))
			status = http.StatusAccepted
		}
	}
	var res []map[string]any
	if json.Unmarshal(body, &req) != nil || (status != http.StatusCreated && status != http.StatusAccepted) || json.Unmarshal(out, &res) != nil || len(res) != len(req.Docs) {
		c.reply(w, status, h, out)
		return
	}
	byID := map[string][]map[string]any{}
	for _, d := range req.Docs {
		id, _ := d["_id"].(string)
		byID[id] = append(byID[id], d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	accepted := c.Accept202.Load() || c.Accept202Next.Add(-1) >= 0
	for k, rr := range res {
		id, _ := rr["id"].(string)
		q := byID[id]
		if len(q) == 0 {
			continue
		}
		doc := q[0]
		byID[id] = q[1:]
		if rev, ok := rr["rev"].(string); ok && rr["error"] == nil {
			c.wrote(front, id, rev, doc)
			if sib := c.sibling(doc); sib != nil {
				if _, err := c.branch(r, sib); err == nil {
					c.Branched.Add(1)
					c.forked[id] = true
					accepted = true
				}
			}
			continue
		}
		if rr["error"] != "conflict" || !c.stale(front, id) {
			continue
		}
		// a stale write through the other coordinator: a conflicting leaf
		rev, err := c.branch(r, doc)
		if err != nil {
			continue
		}
		c.Branched.Add(1)
		c.forked[id] = true
		c.wrote(front, id, rev, doc)
		res[k] = map[string]any{"id": id, "ok": true, "rev": rev}
		accepted = true
	}
	if accepted {
		status = http.StatusAccepted
	}
	b, _ := json.Marshal(res)
	c.reply(w, status, h, b)
}

// lose takes the documents Lost selects out of a _bulk_docs body and
// returns the body to forward and the results to answer for them.
func (c *Cluster) lose(docs []map[string]any, body []byte) ([]byte, []map[string]any) {
	if c.Lost == nil || len(docs) == 0 {
		return body, nil
	}
	var lost []map[string]any
	kept := docs[:0:0]
	for _, d := range docs {
		if c.Lost(d) {
			id, _ := d["_id"].(string)
			lost = append(lost, map[string]any{"id": id, "ok": true, "rev": "1-" + strings.Repeat("0", 32)})
		} else {
			kept = append(kept, d)
		}
	}
	if len(lost) == 0 {
		return body, nil
	}
	b, _ := json.Marshal(map[string]any{"docs": kept})
	return b, lost
}

// keepBefore records, for the other front, the documents about to be
// written as they are before the write, unless it saw a version already
// (one request for all).
func (c *Cluster) keepBefore(r *http.Request, other int, docs []map[string]any) {
	var ids []string
	c.mu.Lock()
	for _, d := range docs {
		id, _ := d["_id"].(string)
		if _, ok := c.seen[other][id]; !ok && id != "" {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	q, _ := json.Marshal(map[string]any{"keys": ids})
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, c.upstream.Path+"/_all_docs?include_docs=true", bytes.NewReader(q))
	if err != nil {
		return
	}
	req.Header = r.Header.Clone()
	req.Header.Set("Content-Type", "application/json")
	status, out, _ := c.forward(req, q)
	var ans struct {
		Rows []struct {
			Key string          `json:"key"`
			Doc json.RawMessage `json:"doc"`
		} `json:"rows"`
	}
	if status != http.StatusOK || json.Unmarshal(out, &ans) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, row := range ans.Rows {
		if _, ok := c.seen[other][row.Key]; ok {
			continue
		}
		if len(row.Doc) == 0 || string(row.Doc) == "null" {
			c.seen[other][row.Key] = nil
		} else {
			c.seen[other][row.Key] = row.Doc
		}
	}
}

func (c *Cluster) sibling(doc map[string]any) map[string]any {
	if c.Sibling == nil {
		return nil
	}
	return c.Sibling(doc)
}

// wrote records a write of doc at rev through front.
func (c *Cluster) wrote(front int, id, rev string, doc map[string]any) {
	c.last[id] = write{front: front, at: time.Now()}
	if del, _ := doc["_deleted"].(bool); del {
		c.seen[front][id] = nil
		return
	}
	d := make(map[string]any, len(doc))
	for k, v := range doc {
		d[k] = v
	}
	d["_rev"] = rev
	c.seen[front][id], _ = json.Marshal(d)
}

// branch stores doc as a new leaf revision on the revision it names (or a
// new root) without checking that this is a leaf, and returns the revision.
func (c *Cluster) branch(r *http.Request, doc map[string]any) (string, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	hash := hex.EncodeToString(b)
	gen, ids := 1, []string{hash}
	if parent, ok := doc["_rev"].(string); ok && parent != "" {
		g, h, _ := strings.Cut(parent, "-")
		n, err := strconv.Atoi(g)
		if err != nil {
			return "", err
		}
		gen, ids = n+1, []string{hash, h}
	}
	d := make(map[string]any, len(doc)+1)
	for k, v := range doc {
		d[k] = v
	}
	rev := fmt.Sprintf("%d-%s", gen, hash)
	d["_rev"], d["_revisions"] = rev, map[string]any{"start": gen, "ids": ids}
	body, _ := json.Marshal(map[string]any{"docs": []any{d}, "new_edits": false})
	req := r.Clone(r.Context())
	status, out, _ := c.forward(req, body)
	if status != http.StatusCreated && status != http.StatusAccepted {
		return "", fmt.Errorf("new_edits=false: HTTP %d: %s", status, out)
	}
	return rev, nil
}

// view serves a view query through front, lagging by ViewLag.
func (c *Cluster) view(front int, w http.ResponseWriter, r *http.Request, body []byte) {
	lag := time.Duration(c.ViewLag.Load())
	if r.URL.Query().Get("include_docs") == "true" || bytes.Contains(body, []byte(`"include_docs":true`)) {
		lag = 0
	}
	c.lagged(front, w, r, body, lag)
}

// lagged serves r through front from the answer to the same query through
// the same front if that is younger than lag.
func (c *Cluster) lagged(front int, w http.ResponseWriter, r *http.Request, body []byte, lag time.Duration) {
	key := r.Method + " " + r.URL.String() + " " + string(body)
	c.mu.Lock()
	old, ok := c.views[front][key]
	c.mu.Unlock()
	if lag > 0 && ok && time.Since(old.at) < lag {
		c.reply(w, old.status, http.Header{"Content-Type": {"application/json"}}, old.body)
		return
	}
	status, out, h := c.forward(r, body)
	if status == http.StatusOK {
		c.mu.Lock()
		c.views[front][key] = cachedReply{at: time.Now(), status: status, body: out}
		c.mu.Unlock()
	}
	c.reply(w, status, h, out)
}
