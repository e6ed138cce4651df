package httplog_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	hc := &http.Client{Transport: httplog.Wrap("fts", func(r httplog.Record) { got = append(got, r) })(http.DefaultTransport)}
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
