package couch_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// refusingTransport counts the requests that would leave the process, and
// sends none.
type refusingTransport struct{ n atomic.Int32 }

func (c *refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, http.ErrUseLastResponse
}

// TestOpen_PasswordWithURLSyntax: a password with an unescaped / ? # or @
// splits the URL so that part of it looks like a host, a path or a
// fragment. Open and Init refuse such a URL before any request, with an
// error that shows no part of the password and says how to escape it.
func TestOpen_PasswordWithURLSyntax(t *testing.T) {
	for _, pw := range []string{"12/SECRETpart", "12?SECRETpart", "12#SECRETpart", "ab/SECRETpart", "12%zzSECRETpart"} {
		u := "http://aso:" + pw + "@127.0.0.1:1/aso_db"
		tr := &refusingTransport{}
		_, err := couch.Open(context.Background(), couch.Options{URL: u, Transport: tr}, state.Config{Agent: state.Agent{User: "u", Owner: "o"}})
		ierr := couch.Init(context.Background(), couch.Options{URL: u, Transport: tr})
		for _, err := range []error{err, ierr} {
			if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "escape") {
				t.Errorf("password %q: %v; want a refusal without the password that says how to escape it", pw, err)
			}
		}
		if n := tr.n.Load(); n != 0 {
			t.Errorf("password %q: %d requests went out", pw, n)
		}
		if got := couch.Redact(u); strings.Contains(got, "SECRET") {
			t.Errorf("Redact(%q) = %q", u, got)
		}
	}
	if got, want := couch.Redact("http://aso:s3cret@db:5984/aso"), "http://aso:xxxxx@db:5984/aso"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}
