// Package httplog wraps an HTTP transport to report every exchange: the
// method, the path, the status and how long the server took to answer. It
// reports to a function the caller gives, so it logs nothing by itself, and
// it never reports what may carry a secret: no query string, no user
// information, no header, no body.
package httplog

import (
	"net/http"
	"sync"
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
	// Stall, if set, is called every StallEvery while a request still
	// waits for its reply, with the time waited so far in Duration: a
	// server that hangs is reported while it hangs, not only at the end.
	Stall      func(Record)
	StallEvery time.Duration
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
	rec := Record{Service: t.Service, Method: req.Method, Host: req.URL.Host, Path: req.URL.EscapedPath()}
	if t.Stall != nil && t.StallEvery > 0 {
		stop := t.watch(rec, start, now)
		defer stop()
	}
	resp, err := base.RoundTrip(req)
	rec.Duration, rec.Err = now().Sub(start), err
	if resp != nil {
		rec.Status = resp.StatusCode
	}
	if t.Log != nil {
		t.Log(rec)
	}
	return resp, err
}

// watch calls Stall every StallEvery until the returned function is called.
// No goroutine waits in between: each report arms the timer of the next.
func (t *Transport) watch(rec Record, start time.Time, now func() time.Time) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var timer *time.Timer
	var report func()
	report = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		r := rec
		r.Duration = now().Sub(start)
		t.Stall(r)
		timer = time.AfterFunc(t.StallEvery, report)
	}
	mu.Lock()
	timer = time.AfterFunc(t.StallEvery, report)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
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
// to log under the name service, and to stall, if not nil, every
// stallEvery while a request waits.
func Wrap(service string, log func(Record), stall func(Record), stallEvery time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &Transport{Base: base, Service: service, Log: log, Stall: stall, StallEvery: stallEvery}
	}
}
