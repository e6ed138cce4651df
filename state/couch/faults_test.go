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
	// cutReads > 0: the next answers of reads (the view, _all_docs) are
	// cut off half way and the connection dropped, as a CouchDB whose
	// query fails after its answer began aborts it; cut counts them.
	cutReads atomic.Int32
	cut      atomic.Int32
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
		case (strings.HasSuffix(r.URL.Path, "/_all_docs") || strings.Contains(r.URL.Path, "/_view/")) && p.cutReads.Add(-1) >= 0:
			p.cut.Add(1)
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			panic(http.ErrAbortHandler)
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

// TestStore_CutAnswers: a read whose answer is cut off is made again; what
// the part that arrived held is never taken for the whole answer.
func TestStore_CutAnswers(t *testing.T) {
	ctx := context.Background()
	u := newDB(t)
	p := newFaultProxy(t, u, false)
	s := open(t, p.dbURL(u), newClock(), "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 40))

	p.cutReads.Store(1)
	got := claim(t, s, 40) // the queue's view
	p.cutReads.Store(1)
	ids := make([]string, len(got))
	for i, tr := range got {
		ids[i] = tr.ID
	}
	list, err := s.List(ctx, state.Filter{User: "alice", IDs: ids}) // _all_docs?keys=
	if err != nil || len(list) != len(ids) {
		t.Fatalf("List through a cut answer = %d, %v; want all %d", len(list), err, len(ids))
	}
	if n := p.cut.Load(); n != 2 {
		t.Fatalf("%d answers cut, want 2: the test tests nothing", n)
	}
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOpen_WrongPassword: the server's refusal of the credentials fails
// at once, with its reason and without the password, and is not retried.
func TestOpen_WrongPassword(t *testing.T) {
	u, err := url.Parse(newDB(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("aso", "s3cret")
	var requests atomic.Int32
	count := roundTripper(func(r *http.Request) (*http.Response, error) {
		requests.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	_, err = couch.Open(context.Background(), couch.Options{URL: u.String(), Transport: count}, state.Config{})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized: Name or password is incorrect.") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open with a wrong password: %v; want the server's reason, without the password", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1: a 401 is not retried", n)
	}
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
