package fts_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
)

// burst answers 503 (Apache's page) n times, then the golden whoami.
func burst(t testing.TB, n int32, code int) (http.HandlerFunc, *atomic.Int32) {
	var calls atomic.Int32
	return func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= n {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(code)
			_, _ = w.Write(golden(t, "error_503.html"))
			return
		}
		_, _ = w.Write(shared(t, "whoami.json"))
	}, &calls
}

func TestRetry_TransientBurst(t *testing.T) {
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusTooManyRequests} {
		f := newFake(t)
		h, calls := burst(t, 3, code)
		f.handle("GET /whoami", h)
		c := f.proxyClient(t, nil)
		if _, err := c.WhoAmI(context.Background()); err != nil {
			t.Fatalf("%d burst: %v", code, err)
		}
		if got := calls.Load(); got != 4 {
			t.Errorf("%d burst: %d calls, want 4", code, got)
		}
	}
}

func TestRetry_GivesUpAfterMaxElapsed(t *testing.T) {
	f := newFake(t)
	h, calls := burst(t, 1<<30, http.StatusServiceUnavailable)
	f.handle("GET /whoami", h)
	c := f.proxyClient(t, func(cfg *fts.Config) {
		cfg.RetryInitial = 10 * time.Millisecond
		cfg.MaxElapsed = 200 * time.Millisecond
	})
	start := time.Now()
	_, err := c.WhoAmI(context.Background())
	if !errors.Is(err, fts.ErrServer) || !fts.IsTransient(err) || !strings.Contains(err.Error(), "temporarily unable to service your request") {
		t.Fatalf("WhoAmI: %v, want a transient ErrServer with Apache's message", err)
	}
	if strings.Contains(err.Error(), "<") {
		t.Errorf("error %q carries HTML", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v, want about MaxElapsed", d)
	}
	if calls.Load() < 2 {
		t.Errorf("%d calls, want retries", calls.Load())
	}
}

func TestRetry_SubmitOnlyWhenNotProcessed(t *testing.T) {
	f := newFake(t)
	var calls atomic.Int32
	f.handle("POST /jobs", func(w http.ResponseWriter, _ *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable) // refused before acting: retried
		case 2:
			w.WriteHeader(http.StatusInternalServerError) // may have acted: not retried
		default:
			_, _ = w.Write(shared(t, "submit.json"))
		}
	})
	c := f.proxyClient(t, nil)
	_, err := c.Submit(context.Background(), testSubmission("sid-5"))
	if !errors.Is(err, fts.ErrServer) || !fts.IsTransient(err) {
		t.Fatalf("Submit: %v, want the 500", err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d submissions, want 2 (503 retried, 500 not)", got)
	}
}

func TestTimeout_HungServer(t *testing.T) {
	f := newFake(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls atomic.Int32
	f.handle("GET /jobs/*", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f.handle("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := f.proxyClient(t, func(cfg *fts.Config) { cfg.Timeout = 150 * time.Millisecond; cfg.MaxElapsed = time.Minute })

	start := time.Now()
	sts, err := c.Status(context.Background(), []string{jobActive, jobOther})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if !errors.Is(st.Err, fts.ErrTimeout) || !fts.IsTransient(st.Err) || st.Lost {
			t.Errorf("job %s on a hung server: %+v, want a transient ErrTimeout", st.JobID, st)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Status on a hung server took %v, want about Timeout", d)
	}
	if _, err := c.Submit(context.Background(), testSubmission("sid-6")); !errors.Is(err, fts.ErrTimeout) {
		t.Errorf("Submit on a hung server: %v, want ErrTimeout", err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d requests, want 2: a timed-out request is not repeated", got)
	}

	// The caller's earlier deadline wins over Timeout.
	c = f.proxyClient(t, func(cfg *fts.Config) { cfg.Timeout = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := c.Status(ctx, []string{jobActive}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Status past the caller's deadline: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Status took %v past a 100ms deadline", d)
	}
}

func TestRetry_ConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	proxy, _ := writeProxy(t, proxyOpts{})
	c, err := fts.New(fts.Config{Endpoint: "https://" + addr, ProxyPath: proxy, Insecure: true,
		RetryInitial: time.Millisecond, MaxElapsed: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WhoAmI(context.Background())
	if err == nil || !fts.IsTransient(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("WhoAmI of a closed port: %v, want a transient connection error", err)
	}
}
