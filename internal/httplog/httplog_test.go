package httplog_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/httplog"
)

func TestTransport_ReportsWithoutSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/slow":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "{}")
		}
	}))
	defer srv.Close()
	var got []httplog.Record
	hc := &http.Client{Transport: httplog.Wrap("fts", func(r httplog.Record) { got = append(got, r) }, nil, 0)(http.DefaultTransport)}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, u := range []string{
		"http://admin:s3cret@" + host + "/jobs/a%2Fb?access_token=s3cret",
		srv.URL + "/busy",
		srv.URL + "/slow",
	} {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	srv.Close()
	if _, err := hc.Get(srv.URL + "/gone"); err == nil {
		t.Fatal("a request to a closed server succeeded")
	}
	if len(got) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(got), got)
	}
	for i, want := range []struct {
		path   string
		status int
		failed bool
	}{{"/jobs/a%2Fb", 200, false}, {"/busy", 503, true}, {"/slow", 429, true}, {"/gone", 0, true}} {
		r := got[i]
		if r.Service != "fts" || r.Method != "GET" || r.Host != host || r.Path != want.path || r.Status != want.status || r.Failed() != want.failed {
			t.Errorf("record %d = %+v (failed %v), want path %s status %d failed %v", i, r, r.Failed(), want.path, want.status, want.failed)
		}
		if r.Duration <= 0 {
			t.Errorf("record %d: duration %v", i, r.Duration)
		}
		if strings.Contains(fmt.Sprintf("%+v", r), "s3cret") {
			t.Errorf("record %d shows the secret: %+v", i, r)
		}
	}
	if got[3].Err == nil {
		t.Errorf("no error recorded for the closed server")
	}
}

// TestTransport_ReportsStalls: a request that waits is reported every
// StallEvery while it waits, with the time waited so far, and no more once
// it has its reply.
func TestTransport_ReportsStalls(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	var mu sync.Mutex
	var stalls []httplog.Record
	stall := func(r httplog.Record) {
		mu.Lock()
		defer mu.Unlock()
		stalls = append(stalls, r)
		if len(stalls) == 3 {
			close(release)
		}
	}
	hc := &http.Client{Transport: httplog.Wrap("couchdb", nil, stall, 20*time.Millisecond)(http.DefaultTransport)}
	resp, err := hc.Get(srv.URL + "/db/_find?secret=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(100 * time.Millisecond) // let it wait five stall periods: no report may come after the reply
	mu.Lock()
	defer mu.Unlock()
	if len(stalls) != 3 {
		t.Fatalf("%d stall reports, want 3 (the third released the reply): %+v", len(stalls), stalls)
	}
	for i, r := range stalls {
		if r.Service != "couchdb" || r.Path != "/db/_find" || r.Status != 0 {
			t.Errorf("stall %d = %+v", i, r)
		}
		if i > 0 && r.Duration <= stalls[i-1].Duration {
			t.Errorf("stall %d waited %v, not more than %v", i, r.Duration, stalls[i-1].Duration)
		}
	}
}
