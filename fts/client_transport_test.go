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
	type retried struct{ wait, elapsed time.Duration }
	var retries []retried
	c := f.proxyClient(t, func(cfg *fts.Config) {
		cfg.RetryInitial = 10 * time.Millisecond
		cfg.MaxElapsed = 200 * time.Millisecond
		cfg.OnRetry = func(_, _ string, _ error, wait, elapsed time.Duration) {
			retries = append(retries, retried{wait, elapsed})
		}
	})
	_, err := c.WhoAmI(context.Background())
	if !errors.Is(err, fts.ErrServer) || !fts.IsTransient(err) || !strings.Contains(err.Error(), "temporarily unable to service your request") {
		t.Fatalf("WhoAmI: %v, want a transient ErrServer with Apache's message", err)
	}
	if strings.Contains(err.Error(), "<") {
		t.Errorf("error %q carries HTML", err)
	}
	for i, r := range retries {
		if r.elapsed+r.wait > 200*time.Millisecond {
			t.Errorf("retry %d: a try at %v after the first, past MaxElapsed", i+1, r.elapsed+r.wait)
		}
	}
	if n := calls.Load(); n < 2 || int(n) != len(retries)+1 {
		t.Errorf("%d calls and %d retries announced, want retries, each announced", n, len(retries))
	}
}

// TestRetry_WaitsGrowWithJitter: each wait is half again the last, from
// RetryInitial, drawn within ±50% of that, and announced with the time
// elapsed since the first try.
func TestRetry_WaitsGrowWithJitter(t *testing.T) {
	f := newFake(t)
	h, calls := burst(t, 8, http.StatusServiceUnavailable)
	f.handle("GET /whoami", h)
	type retried struct{ wait, elapsed time.Duration }
	var retries []retried
	c := f.proxyClient(t, func(cfg *fts.Config) {
		cfg.RetryInitial, cfg.MaxElapsed = 2*time.Millisecond, time.Minute
		cfg.OnRetry = func(_, _ string, _ error, wait, elapsed time.Duration) {
			retries = append(retries, retried{wait, elapsed})
		}
	})
	if _, err := c.WhoAmI(context.Background()); err != nil {
		t.Fatal(err)
	}
	nominal, waited := 2*time.Millisecond, time.Duration(0)
	distinct := map[time.Duration]bool{}
	for i, r := range retries {
		if r.wait < nominal/2 || r.wait > nominal*3/2 {
			t.Errorf("wait %d is %v, want within ±50%% of %v", i+1, r.wait, nominal)
		}
		if r.elapsed < waited {
			t.Errorf("wait %d announced at %v elapsed, before the %v waited until then", i+1, r.elapsed, waited)
		}
		waited += r.wait
		distinct[r.wait] = true
		nominal = nominal * 3 / 2
	}
	if calls.Load() != 9 || len(retries) != 8 || len(distinct) < 5 {
		t.Errorf("%d calls, waits %v; want 9 calls and 8 waits with jitter", calls.Load(), retries)
	}
}

// TestRetry_HonoursContext: a context that ends during a wait ends the
// request at once with its error.
func TestRetry_HonoursContext(t *testing.T) {
	f := newFake(t)
	h, calls := burst(t, 1<<30, http.StatusServiceUnavailable)
	f.handle("GET /whoami", h)
	ctx, cancel := context.WithCancel(context.Background())
	c := f.proxyClient(t, func(cfg *fts.Config) {
		cfg.RetryInitial, cfg.MaxElapsed = time.Hour, 10*time.Hour
		cfg.OnRetry = func(string, string, error, time.Duration, time.Duration) { cancel() }
	})
	start := time.Now()
	if _, err := c.WhoAmI(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("WhoAmI = %v, want context.Canceled", err)
	}
	if calls.Load() != 1 || time.Since(start) > time.Minute {
		t.Errorf("%d calls, returned after %v; want 1, at once", calls.Load(), time.Since(start))
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
	gaveUp := make(chan string, 3) // the requests the client gave up on
	hang := func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			gaveUp <- r.Method + " " + r.URL.Path
		}
	}
	f.handle("GET /jobs/*", hang)
	f.handle("POST /jobs", hang)
	c := f.proxyClient(t, func(cfg *fts.Config) { cfg.Timeout = 150 * time.Millisecond; cfg.MaxElapsed = time.Minute })

	sts, err := c.Status(context.Background(), []string{jobActive, jobOther})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if !errors.Is(st.Err, fts.ErrTimeout) || !fts.IsTransient(st.Err) || st.Lost {
			t.Errorf("job %s on a hung server: %+v, want a transient ErrTimeout", st.JobID, st)
		}
	}
	if got := <-gaveUp; !strings.HasPrefix(got, "GET /jobs/") {
		t.Errorf("the client gave up on %s, want the status request", got)
	}
	if _, err := c.Submit(context.Background(), testSubmission("sid-6")); !errors.Is(err, fts.ErrTimeout) {
		t.Errorf("Submit on a hung server: %v, want ErrTimeout", err)
	}
	if got := <-gaveUp; got != "POST /jobs" {
		t.Errorf("the client gave up on %s, want the submission", got)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d requests, want 2: a timed-out request is not repeated", got)
	}

	// The caller's earlier deadline wins over Timeout: the request is given
	// up when ctx ends, with ctx's error, and not repeated.
	c = f.proxyClient(t, func(cfg *fts.Config) { cfg.Timeout = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Status(ctx, []string{jobActive}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fts.ErrTimeout) {
		t.Errorf("Status past the caller's deadline: %v, want the caller's context.DeadlineExceeded", err)
	}
	if got := <-gaveUp; !strings.HasPrefix(got, "GET /jobs/") {
		t.Errorf("the client gave up on %s, want the status request", got)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("%d requests, want 3", got)
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
