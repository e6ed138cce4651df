package fts_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
)

// fakeFTS is an HTTPS server answering fixed routes with golden FTS3
// replies, for the parsing cases; it records what it was sent. Unknown
// routes get werkzeug's 404 page, as FTS3 gives them.
type fakeFTS struct {
	t      testing.TB
	srv    *httptest.Server
	caDir  string
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	seen   []seenRequest
}

type seenRequest struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
	ClientCerts         int       // certificates the client presented
	ClientNotAfter      time.Time // expiry of the first one
}

func newFake(t testing.TB) *fakeFTS {
	t.Helper()
	f := &fakeFTS{t: t, routes: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	// Like Apache's "SSLVerifyClient optional": ask, do not require.
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes refused on purpose
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.caDir = writeCADir(t, f.srv.Certificate())
	return f
}

func (f *fakeFTS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	sr := seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if r.TLS != nil {
		sr.ClientCerts = len(r.TLS.PeerCertificates)
		if sr.ClientCerts > 0 {
			sr.ClientNotAfter = r.TLS.PeerCertificates[0].NotAfter
		}
	}
	f.mu.Lock()
	f.seen = append(f.seen, sr)
	h := f.routes[r.Method+" "+sr.Path]
	for route, rh := range f.routes {
		if prefix, ok := strings.CutSuffix(route, "*"); ok && h == nil && strings.HasPrefix(r.Method+" "+sr.Path, prefix) {
			h = rh
		}
	}
	f.mu.Unlock()
	if h == nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(golden(f.t, "error_404.html"))
		return
	}
	h(w, r)
}

// handle sets the handler of "METHOD /path", or of every path starting
// with a prefix given as "METHOD /prefix*".
func (f *fakeFTS) handle(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// reply makes "METHOD /path" answer status with body.
func (f *fakeFTS) reply(route string, status int, body []byte) {
	f.handle(route, func(w http.ResponseWriter, _ *http.Request) {
		if len(body) > 0 && body[0] == '<' {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// requests returns the requests made to "METHOD /path" so far.
func (f *fakeFTS) requests(route string) []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenRequest
	for _, r := range f.seen {
		if r.Method+" "+r.Path == route {
			out = append(out, r)
		}
	}
	return out
}

// seenAll returns every request made so far.
func (f *fakeFTS) seenAll() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func (f *fakeFTS) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// proxyClient returns a client of f authenticated by a fresh proxy; edit
// may change the configuration first.
func (f *fakeFTS) proxyClient(t testing.TB, edit func(*fts.Config)) *fts.Client {
	t.Helper()
	proxy, _ := writeProxy(t, proxyOpts{})
	return newClient(t, fts.Config{Endpoint: f.srv.URL, ProxyPath: proxy, CertDir: f.caDir}, edit)
}

// newClient makes a client of cfg with quick retries (first after 1 ms,
// for at most 2 s), then changed by edit if given.
func newClient(t testing.TB, cfg fts.Config, edit func(*fts.Config)) *fts.Client {
	t.Helper()
	cfg.RetryInitial, cfg.MaxElapsed, cfg.Timeout = time.Millisecond, 2*time.Second, 5*time.Second
	if edit != nil {
		edit(&cfg)
	}
	c, err := fts.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// golden reads a reply of this package's edge cases (fts/testdata).
func golden(t testing.TB, name string) []byte {
	t.Helper()
	return readFile(t, filepath.Join("testdata", name))
}

// shared reads a golden FTS3 reply shared with the simulator's tests
// (testdata/fts at the top of the module).
func shared(t testing.TB, name string) []byte {
	t.Helper()
	return readFile(t, filepath.Join("..", "testdata", "fts", name))
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden reply: %v", err)
	}
	return data
}
