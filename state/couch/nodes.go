package couch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// A database URL may name several nodes of one CouchDB cluster, separated
// by commas: couchdb://h1:5984/aso,couchdb://h2:5984/aso. Every element
// starts with its scheme (a comma followed by couchdb://, http:// or
// https:// separates two URLs; any other comma belongs to the URL, e.g. to
// a password), names the same database, and carries the same credentials
// or none (those given, else Options.Username/Password, are used).

// nodeSep finds the commas that separate node URLs.
var nodeSep = regexp.MustCompile(`,\s*(?:couchdb|https?)://`)

// splitNodes splits a list of node URLs.
func splitNodes(raw string) []string {
	var out []string
	for {
		loc := nodeSep.FindStringIndex(raw)
		if loc == nil {
			return append(out, raw)
		}
		out = append(out, raw[:loc[0]])
		raw = strings.TrimLeft(raw[loc[0]+1:], " \t")
	}
}

// parseNodes parses a list of node URLs of one database. The first
// target carries the credentials of the list (of whichever URL gives them).
func parseNodes(raw string) ([]target, error) {
	parts := splitNodes(raw)
	ts := make([]target, len(parts))
	var user, pass string
	for i, p := range parts {
		t, err := parseURL(p)
		if err != nil {
			return nil, err
		}
		if i > 0 && t.db != ts[0].db {
			return nil, fmt.Errorf("couch: database URL %s: node %d names database %q, node 1 %q; every node URL must name the same database", Redact(raw), i+1, t.db, ts[0].db)
		}
		if t.user != "" {
			if user != "" && (t.user != user || t.pass != pass) {
				return nil, fmt.Errorf("couch: database URL %s: node %d carries other credentials than an earlier one; give them once (in one URL or ASO_COUCHDB_*)", Redact(raw), i+1)
			}
			user, pass = t.user, t.pass
		}
		ts[i] = t
	}
	ts[0].user, ts[0].pass = user, pass
	return ts, nil
}

// failover sends each request to the node that answered last and, when a
// node cannot be reached, times out or answers 5xx, to the next one, each
// try bounded by timeout. The requests it gets name the first node.
type failover struct {
	next    http.RoundTripper
	nodes   []*url.URL // scheme, host and path prefix of each node's server
	cur     atomic.Int32
	timeout time.Duration
}

func newFailover(next http.RoundTripper, ts []target, timeout time.Duration) (*failover, error) {
	f := &failover{next: next, timeout: timeout}
	for _, t := range ts {
		u, err := url.Parse(t.server)
		if err != nil {
			return nil, fmt.Errorf("couch: node %s: %w", t.server, err)
		}
		f.nodes = append(f.nodes, u)
	}
	return f, nil
}

// RoundTrip implements http.RoundTripper.
func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	start := int(f.cur.Load())
	var lastErr error
	for k := range f.nodes {
		i := (start + k) % len(f.nodes)
		ctx, cancel := context.WithTimeout(req.Context(), f.timeout)
		r := req.Clone(ctx)
		r.URL = f.on(i, req.URL)
		r.Host = ""
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		resp, err := f.next.RoundTrip(r)
		last := k == len(f.nodes)-1
		if err == nil && (resp.StatusCode < 500 || last) {
			f.cur.Store(int32(i))
			resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			err = fmt.Errorf("HTTP %d from %s", resp.StatusCode, f.nodes[i].Host)
		}
		cancel()
		lastErr = err
		if req.Context().Err() != nil {
			break
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no node")
	}
	return nil, fmt.Errorf("every node failed, the last: %w", lastErr)
}

// on returns u (a URL on node 0) moved to node i.
func (f *failover) on(i int, u *url.URL) *url.URL {
	n0, n := f.nodes[0], f.nodes[i]
	c := *u
	c.Scheme, c.Host = n.Scheme, n.Host
	c.Path = n.Path + strings.TrimPrefix(u.Path, n0.Path)
	if u.RawPath != "" {
		c.RawPath = n.EscapedPath() + strings.TrimPrefix(u.RawPath, n0.EscapedPath())
	}
	return &c
}

// cancelBody cancels a try's context once its response body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
