package cmd_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// ftsFront stands between agents and an FTS simulator: every request goes
// through to it, unless a hook set for its kind answers it instead. The
// kinds: "whoami" (GET /whoami), "submit" (POST /jobs), "status" (GET
// /jobs/...), "other".
type ftsFront struct {
	URL   string
	proxy http.Handler

	mu    sync.Mutex
	hooks map[string]http.HandlerFunc
	next  map[string]chan struct{} // closed at the next request of a kind
}

// newFTSFront serves a front for the simulator at target until t ends.
func newFTSFront(t testing.TB, target string) *ftsFront {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &ftsFront{hooks: map[string]http.HandlerFunc{}, next: map[string]chan struct{}{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	f.proxy = proxy
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := requestKind(r)
		f.mu.Lock()
		h := f.hooks[kind]
		if c := f.next[kind]; c != nil {
			close(c)
			delete(f.next, kind)
		}
		f.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func requestKind(r *http.Request) string {
	p := strings.Trim(r.URL.Path, "/")
	switch {
	case p == "whoami":
		return "whoami"
	case p == "jobs" && r.Method == http.MethodPost:
		return "submit"
	case strings.HasPrefix(p, "jobs/") && r.Method == http.MethodGet:
		return "status"
	}
	return "other"
}

// pass sends r on to the simulator.
func (f *ftsFront) pass(w http.ResponseWriter, r *http.Request) { f.proxy.ServeHTTP(w, r) }

// set answers the requests of kind with h from now on (nil: pass them on).
func (f *ftsFront) set(kind string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h == nil {
		delete(f.hooks, kind)
		return
	}
	f.hooks[kind] = h
}

// arrival returns a channel closed when the next request of kind arrives.
func (f *ftsFront) arrival(kind string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.next[kind]
	if c == nil {
		c = make(chan struct{})
		f.next[kind] = c
	}
	return c
}

// hang holds a request unanswered until its client gives up.
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// unavailable answers as an FTS whose database is down.
func unavailable(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
}
