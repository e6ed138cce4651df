package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/serve/servetest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/memfile"
)

func TestMain(m *testing.M) { os.Exit(couchtest.Main(m)) }

// clock is a settable clock for the server.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// counting counts the HTTP requests of a CouchDB store, and keeps those
// that are not reads.
type counting struct {
	rt     http.RoundTripper
	n      atomic.Int64
	mu     sync.Mutex
	writes []string
}

// reads are the POSTs that only read: Mango queries, reads by ID, views
// with keys.
var reads = regexp.MustCompile(`/(_find|_all_docs|_bulk_get|_view/[a-z]+)$`)

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !(r.Method == http.MethodPost && reads.MatchString(r.URL.Path)) {
		c.mu.Lock()
		c.writes = append(c.writes, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
	}
	return c.rt.RoundTrip(r)
}

// noWrites fails if b's store was asked anything but reads.
func noWrites(t *testing.T, b backend) {
	t.Helper()
	if b.reqs == nil {
		return
	}
	b.reqs.mu.Lock()
	defer b.reqs.mu.Unlock()
	if len(b.reqs.writes) > 0 {
		t.Fatalf("aso serve wrote to the store: %q", b.reqs.writes)
	}
}

// backend is a store of perUser transfers of each of servetest.Users, the
// read-only handle the server reads, and the count of that handle's
// requests (CouchDB; nil on memfile).
type backend struct {
	name string
	st   state.Store
	reqs *counting
}

var fillStart = time.Now().Add(-12 * time.Hour).Truncate(time.Second)

func memfileBackend(t *testing.T, perUser int) backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.aso")
	clk := &servetest.Clock{T: fillStart}
	err := servetest.Fill(context.Background(), func(user string) (state.Store, error) {
		return memfile.Open(path, state.Config{Agent: state.Agent{User: user, Owner: "host:1:fill"}, Now: clk.Now})
	}, perUser, clk)
	if err != nil {
		t.Fatal(err)
	}
	st, err := memfile.OpenOptions(path, state.Config{}, memfile.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return backend{name: "memfile", st: st}
}

func couchBackend(t *testing.T, perUser int) backend {
	t.Helper()
	u := couchtest.DB(t)
	ctx := context.Background()
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	clk := &servetest.Clock{T: fillStart}
	err := servetest.Fill(ctx, func(user string) (state.Store, error) {
		return couch.Open(ctx, couch.Options{URL: u}, state.Config{Agent: state.Agent{User: user, Owner: "host:1:fill"}, Now: clk.Now})
	}, perUser, clk)
	if err != nil {
		t.Fatal(err)
	}
	reqs := &counting{rt: http.DefaultTransport}
	st, err := couch.Open(ctx, couch.Options{URL: u, Transport: reqs}, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return backend{name: "couchdb", st: st, reqs: reqs}
}

// start serves b's store with o (its Store and Now set here) and returns
// the server's URL and clock.
func start(t *testing.T, b backend, o serve.Options) (string, *clock) {
	t.Helper()
	clk := &clock{t: time.Now()}
	o.Store, o.Now = b.st, clk.Now
	s, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, clk
}

// get fetches u with c (nil: a plain client) and returns the status and
// body.
func get(t *testing.T, c *http.Client, u string, setup ...func(*http.Request)) (int, string) {
	t.Helper()
	if c == nil {
		c = &http.Client{Timeout: time.Minute}
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
