package couch

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
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

// failover sends each request to the node that answered last. A node
// that cannot be reached, times out or answers 5xx fails the request, and
// the next node takes its place: the retry of the request (retryHTTP),
// with its waits, tries it there. The requests it gets name the first node.
type failover struct {
	next  http.RoundTripper
	nodes []*url.URL // scheme, host and path prefix of each node's server
	cur   atomic.Int32
}

func newFailover(next http.RoundTripper, ts []target) (*failover, error) {
	f := &failover{next: next}
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
	i := f.cur.Load()
	r := req.Clone(req.Context())
	r.URL = f.on(int(i), req.URL)
	r.Host = ""
	resp, err := f.next.RoundTrip(r)
	if err != nil || resp.StatusCode >= 500 {
		// the next try goes to the next node, once for requests that
		// failed together
		f.cur.CompareAndSwap(i, (i+1)%int32(len(f.nodes)))
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", f.nodes[i].Host, err)
	}
	return resp, nil
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
