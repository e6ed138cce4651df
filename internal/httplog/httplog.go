// Package httplog wraps an HTTP transport to report every exchange: the
// method, the path, the status and how long the server took to answer. It
// reports to a function the caller gives, so it logs nothing by itself, and
// it never reports what may carry a secret: no query string, no user
// information, no header, no body.
package httplog

import (
	"net/http"
	"time"
)

// Record is one HTTP exchange, as far as the transport saw it.
type Record struct {
	Service  string        // the caller's name for the server, such as "fts" or "couchdb"
	Method   string        // GET, POST, ...
	Host     string        // host[:port], without user information
	Path     string        // the escaped path, without the query
	Status   int           // the reply's status; 0 when Err is set
	Duration time.Duration // from sending the request to the reply's headers
	Err      error         // the transport's error (no reply)
}

// Failed reports whether the exchange failed in a way a retry may mend: no
// reply, a 5xx reply or 429.
func (r Record) Failed() bool {
	return r.Err != nil || r.Status >= 500 || r.Status == http.StatusTooManyRequests
}

// Transport is an http.RoundTripper that calls Log after each exchange of
// Base.
type Transport struct {
	Base    http.RoundTripper // nil: http.DefaultTransport
	Service string
	Log     func(Record)
	Now     func() time.Time // nil: time.Now
}

// RoundTrip performs req with Base and reports it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base, now := t.Base, t.Now
	if base == nil {
		base = http.DefaultTransport
	}
	if now == nil {
		now = time.Now
	}
	start := now()
	resp, err := base.RoundTrip(req)
	rec := Record{Service: t.Service, Method: req.Method, Host: req.URL.Host, Path: req.URL.EscapedPath(), Duration: now().Sub(start), Err: err}
	if resp != nil {
		rec.Status = resp.StatusCode
	}
	if t.Log != nil {
		t.Log(rec)
	}
	return resp, err
}

// CloseIdleConnections passes the call on to Base, so that a client that
// closes its idle connections (a renewed credential) still can.
func (t *Transport) CloseIdleConnections() {
	type closer interface{ CloseIdleConnections() }
	if c, ok := t.Base.(closer); ok {
		c.CloseIdleConnections()
	}
}

// Wrap returns a function that wraps a transport in a Transport reporting
// to log under the name service.
func Wrap(service string, log func(Record)) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &Transport{Base: base, Service: service, Log: log}
	}
}
