package couch_test

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// faultProxy sits between the store and the server and breaks requests on
// demand.
type faultProxy struct {
	*httptest.Server
	// loseBulk > 0: the next _bulk_docs requests reach the server but
	// their answer is replaced by a 502.
	loseBulk atomic.Int32
	// fail503 > 0: the next requests are answered 503 without reaching
	// the server.
	fail503 atomic.Int32
	// hang: requests are held until the client gives up.
	hang atomic.Bool
	// served counts the requests passed on to the server.
	served atomic.Int64
}

func newFaultProxy(t *testing.T, target string, tls bool) *faultProxy {
	t.Helper()
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: tu.Scheme, Host: tu.Host})
	p := &faultProxy{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case p.hang.Load():
			// the server notices the client leaving only once the body is read
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		case p.fail503.Add(-1) >= 0:
			http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
			return
		case strings.HasSuffix(r.URL.Path, "/_bulk_docs") && p.loseBulk.Add(-1) >= 0:
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		p.served.Add(1)
		rp.ServeHTTP(w, r)
	})
	p.Server = httptest.NewUnstartedServer(h)
	p.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are the point
	if tls {
		p.StartTLS()
	} else {
		p.Start()
	}
	t.Cleanup(p.Close)
	return p
}

// dbURL is the proxy's URL of the database at u, with u's credentials
// (the proxy passes them on).
func (p *faultProxy) dbURL(u string) string {
	pu, err := url.Parse(p.URL + "/" + u[strings.LastIndex(u, "/")+1:])
	if err != nil {
		panic(err)
	}
	if tu, err := url.Parse(u); err == nil {
		pu.User = tu.User
	}
	return pu.String()
}

func TestStore_LostAnswers(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	p := newFaultProxy(t, u, false)
	s := open(t, p.dbURL(u), c, "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 4))

	p.loseBulk.Store(1)
	got, err := statetest.Claim(ctx, s, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("claims whose answer was lost: got %d, want all 4 (the writes landed)", len(got))
	}
	p.loseBulk.Store(1)
	cs := make([]state.Commit, len(got))
	for i, tr := range got {
		cs[i] = state.Commit{Transfer: tr, DestPFN: "file:///d"}
	}
	res, err := statetest.Commit(ctx, s, cs, "job-1")
	mustOK(t, res, err)
	for i, r := range res {
		tr, err := s.Get(ctx, r.ID)
		if err != nil || tr.Rev != r.Rev || tr.State != state.StateSubmitted {
			t.Fatalf("item %d after a lost answer: %+v rev %s, %v; want submitted at the returned rev %s", i, tr.State, tr.Rev, err, r.Rev)
		}
		if n := len(tr.History); tr.History[n-2].To == state.StateSubmitted {
			t.Fatalf("item %d: the commit was applied twice: %+v", i, tr.History)
		}
	}

	p.fail503.Store(2)
	jobs, err := statetest.Active(ctx, s, "alice")
	if err != nil || len(jobs) != 1 || len(jobs[0].Transfers) != 4 {
		t.Fatalf("ActiveTransfers through two 503s: %v, %v", jobs, err)
	}
	p.fail503.Store(100)
	if _, err := statetest.Active(ctx, s, "alice"); err == nil {
		t.Fatal("ActiveTransfers succeeded with the server down")
	}
	p.fail503.Store(0)
}

func TestOpen_Timeout(t *testing.T) {
	u := newDB(t)
	p := newFaultProxy(t, u, false)
	p.hang.Store(true)
	start := time.Now()
	_, err := couch.Open(context.Background(), couch.Options{URL: p.dbURL(u), Timeout: 100 * time.Millisecond}, state.Config{})
	if err == nil {
		t.Fatal("Open of a hanging server succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Open took %v with a 100ms request timeout", d)
	}
}

func TestOpen_TLS(t *testing.T) {
	u := newDB(t)
	p := newFaultProxy(t, u, true)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
	if err := os.WriteFile(ca, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := couch.Open(ctx, couch.Options{URL: p.dbURL(u), Timeout: 5 * time.Second}, state.Config{}); err == nil {
		t.Fatal("Open trusted an unknown CA")
	}
	s, err := couch.Open(ctx, couch.Options{URL: p.dbURL(u), CAFile: ca}, state.Config{})
	if err != nil {
		t.Fatalf("Open with the CA file: %v", err)
	}
	_ = s.Close()
	if _, err := couch.Open(ctx, couch.Options{URL: p.dbURL(u), CAFile: filepath.Join(t.TempDir(), "missing.pem")}, state.Config{}); err == nil {
		t.Fatal("Open with a missing CA file succeeded")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://bob:s3cret@host:5984/db": "http://bob:xxxxx@host:5984/db",
		"couchdb://host:5984/db":         "couchdb://host:5984/db",
		"http://bob:s3cret@ho st/%zz":    "http://xxxxx@ho st/%zz",
	} {
		if got := couch.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := couch.Open(context.Background(), couch.Options{URL: "http://bob:s3cret@127.0.0.1:1/db", Timeout: time.Second}, state.Config{})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of an unreachable server: %v (must fail without the password)", err)
	}
	for _, bad := range []string{"ftp://h/db", "http://h:5984/", "http:///db"} {
		if _, err := couch.Open(context.Background(), couch.Options{URL: bad}, state.Config{}); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}
