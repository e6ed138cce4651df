package couch_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestMain(m *testing.M) { os.Exit(couchtest.Main(m)) }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newDB returns the URL of a fresh database prepared by Init.
func newDB(t testing.TB) string {
	t.Helper()
	u := couchtest.DB(t)
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return u
}

// open opens a store on url for agent owner of user.
func open(t testing.TB, url string, c *clock, user, owner string, o couch.Options) *couch.Store {
	t.Helper()
	o.URL = url
	s, err := couch.Open(context.Background(), o, state.Config{Agent: state.Agent{User: user, Owner: owner}, Now: c.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// requests returns n valid requests of user.
func requests(user string, n int) []state.Request {
	rs := make([]state.Request, n)
	for i := range rs {
		rs[i] = state.Request{
			User: user, Source: "T2_US_Nebraska", Destination: "T1_US_FNAL",
			SourceLFN:      fmt.Sprintf("/store/user/%s/src/file%05d.root", user, i),
			DestinationLFN: fmt.Sprintf("/store/user/%s/dst/file%05d.root", user, i),
			Size:           int64(1000 + i), Checksums: map[string]string{"adler32": "0a1b2c3d"},
		}
	}
	return rs
}

func enqueue(t testing.TB, s *couch.Store, reqs []state.Request) {
	t.Helper()
	res, err := s.Enqueue(context.Background(), reqs)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	for _, r := range res {
		if r.Status != state.Stored {
			t.Fatalf("Enqueue %s: %s %v", r.ID, r.Status, r.Err)
		}
	}
}

// claim claims n transfers through s, failing the test unless it gets
// exactly n.
func claim(t testing.TB, s *couch.Store, n int) []state.Transfer {
	t.Helper()
	got, err := statetest.Claim(context.Background(), s, n)
	if err != nil || len(got) != n {
		t.Fatalf("NewTransfers = %d, %v; want %d", len(got), err, n)
	}
	return got
}

func mustOK(t testing.TB, res []state.Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("item %s: %v", r.ID, r.Err)
		}
	}
}
