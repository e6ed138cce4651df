package couch_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// closedURL returns the URL of a database on a loopback port nothing
// listens on.
func closedURL(t *testing.T, db string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/" + db
}

// TestStore_FailsOver gives the store three node URLs: one refuses
// connections, one hangs past the request timeout, one answers. Every call
// goes through; when the answering node fails with 503, another that
// answers again is used; with every node down, a call fails in bounded
// time without showing the password.
func TestStore_FailsOver(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	db := u[strings.LastIndex(u, "/")+1:]
	hung := newFaultProxy(t, u, false)
	hung.hang.Store(true)
	good := newFaultProxy(t, u, false)
	list := closedURL(t, db) + "," + hung.dbURL(u) + ", " + good.dbURL(u)
	s := open(t, list, c, "alice", "host:1:a", couch.Options{Timeout: 300 * time.Millisecond})
	enqueue(t, s, requests("alice", 4))
	got, err := statetest.Claim(ctx, s, 4)
	if err != nil || len(got) != 4 {
		t.Fatalf("claims through the third node: %d, %v", len(got), err)
	}
	l, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// requests stay with the node that answered last, though a node before
	// it in the list answers again
	hung.hang.Store(false)
	before, beforeGood := hung.served.Load(), good.served.Load()
	for range 3 {
		if _, err := s.Get(ctx, got[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := hung.served.Load()-before, good.served.Load()-beforeGood; n != 0 || m == 0 {
		t.Errorf("after the failover: %d requests to the second node, %d to the third; want all to the third, which answered last", n, m)
	}
	// the answering node fails with 503: the others are tried again, the
	// hung one answers now
	hung.hang.Store(false)
	good.fail503.Store(1000)
	if _, err := s.RenewLock(ctx, l, time.Minute); err != nil {
		t.Fatalf("renewal after the node in use failed: %v", err)
	}
	hung.hang.Store(true)
	good.fail503.Store(1000)
	start := time.Now()
	if _, err := s.Get(ctx, got[0].ID); err == nil {
		t.Fatal("a read succeeded with every node down")
	} else if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error shows a password: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("giving up on three dead nodes took %s", d)
	}
}

func TestOpen_NodeList(t *testing.T) {
	ctx := context.Background()
	for name, list := range map[string]string{
		"two databases":         "http://h1:5984/aso,http://h2:5984/other",
		"two sets of passwords": "http://u:secret1@h1:5984/aso,http://u:secret2@h2:5984/aso",
		"a bad element":         "http://h1:5984/aso,couchdb://h2:5984/",
	} {
		_, err := couch.Open(ctx, couch.Options{URL: list, Timeout: time.Second}, state.Config{})
		if err == nil {
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows a password: %v", name, err)
		}
	}
	if got, want := couch.Redact("couchdb://u:pw1@h1:5984/aso,couchdb://u:pw1@h2:5984/aso"), "couchdb://u:xxxxx@h1:5984/aso,couchdb://u:xxxxx@h2:5984/aso"; got != want {
		t.Errorf("Redact of a node list: %q, want %q", got, want)
	}
}
