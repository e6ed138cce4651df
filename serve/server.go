package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// Defaults of Options.
const (
	DefaultCacheTTL = 10 * time.Second
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Options configure a Server.
type Options struct {
	// Store is read, never written. The caller opens and closes it.
	Store state.Store
	// Auth says who may see what; nil lets every request see everything
	// (a server on the loopback interface only).
	Auth *Auth
	// CacheTTL is how long counts, locks and summaries are kept before
	// they are read again (0: DefaultCacheTTL).
	CacheTTL time.Duration
	// StaleAfter is the status page's --stale-after (0: its default).
	StaleAfter time.Duration
	// PageSize is the number of transfers a list page shows when the
	// request does not say (0: DefaultPageSize).
	PageSize int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ErrorLog receives the errors of requests that failed on the
	// store's side (the page shows the error too); nil drops them.
	ErrorLog func(r *http.Request, err error)
}

// Server is the web view of a store.
type Server struct {
	o       Options
	cache   *cache
	pages   *pages
	metrics *prometheus.Registry
}

// New returns a Server on o.Store.
func New(o Options) (*Server, error) {
	if o.Store == nil {
		return nil, errors.New("serve: no store")
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	o.PageSize = min(o.PageSize, MaxPageSize)
	if o.StaleAfter <= 0 {
		o.StaleAfter = state.DefaultStaleAfter
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, cache: newCache(o.CacheTTL, o.Now), pages: p, metrics: prometheus.NewRegistry()}
	if err := s.metrics.Register(&collector{s: s}); err != nil {
		return nil, fmt.Errorf("serve: metrics: %w", err)
	}
	return s, nil
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	both := func(path string, h func(w http.ResponseWriter, r *http.Request, v *viewer, api bool)) {
		mux.Handle("GET "+path, s.guard(func(w http.ResponseWriter, r *http.Request, v *viewer) { h(w, r, v, false) }))
		mux.Handle("GET /api"+path, s.guard(func(w http.ResponseWriter, r *http.Request, v *viewer) { h(w, r, v, true) }))
	}
	ov, list, tr, st := overviewPages{s}, listPage{s}, transferPage{s}, statusPage{s}
	both("/overview", ov.overview)
	mux.Handle("GET /{$}", s.guard(func(w http.ResponseWriter, r *http.Request, v *viewer) { ov.overview(w, r, v, false) }))
	both("/users/{user}", ov.user)
	both("/links/{link}", ov.link)
	both("/transfers", list.serve)
	both("/transfers/{id}", tr.serve)
	both("/status", st.serve)
	metrics := promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	mux.Handle("GET /metrics", s.guard(func(w http.ResponseWriter, r *http.Request, v *viewer) {
		if !v.Operator {
			s.refuse(w, r, http.StatusForbidden, "the metrics count every user's transfers: only an operator may read them")
			return
		}
		metrics.ServeHTTP(w, r)
	}))
	return securityHeaders(mux)
}

// securityHeaders sets the headers every answer carries: no script, no
// framing, no sniffing, nothing cached by shared caches.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "private, no-store")
		h.ServeHTTP(w, r)
	})
}

// snapshot is what the overview, user and link pages and the metrics
// read of the store for every user ("") or one: the counts (with the
// transfers finished over the last week by hour and over the last hour by
// minute) and the run locks, taken at At.
type snapshot struct {
	At     time.Time
	User   string
	Counts state.Counts
	Locks  []statusview.LockView
}

// The windows of the charts and the rates.
const (
	chartWeek  = 7 * 24 * time.Hour
	chartDay   = 24 * time.Hour
	rateWindow = time.Hour
)

// snapshot returns the cached snapshot of user ("" every user): two calls
// of the store (Counts and Locks), whatever the number of transfers.
func (s *Server) snapshot(ctx context.Context, user string) (*snapshot, error) {
	v, err := s.cache.get(ctx, "counts\x00"+user, func(ctx context.Context) (any, error) {
		now := s.o.Now()
		c, err := s.o.Store.Counts(ctx, state.CountsOptions{User: user, HoursSince: now.Add(-chartWeek), MinutesSince: now.Add(-rateWindow)})
		if err != nil {
			return nil, err
		}
		locks, err := statusview.Locks(ctx, s.o.Store, user, now)
		if err != nil {
			return nil, err
		}
		return &snapshot{At: now, User: user, Counts: c, Locks: statusview.NonNil(locks)}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*snapshot), nil
}

// refuse answers a refused or bad request: code and msg, as JSON on the
// API and as a page otherwise.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if isAPI(r) || r.URL.Path == "/metrics" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = statusview.WriteJSON(w, map[string]any{"error": msg, "status": code})
		return
	}
	s.pages.render(w, code, "error", &errorPage{Code: code, Title: http.StatusText(code), Message: msg})
}

// fail answers a request whose read of the store failed: 503 (the store
// may be back soon), the error logged and shown.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if s.o.ErrorLog != nil {
		s.o.ErrorLog(r, err)
	}
	code := http.StatusServiceUnavailable
	if errors.Is(err, context.Canceled) {
		code = 499 // the client went away: nobody reads the answer
	}
	s.refuse(w, r, code, "reading the state store failed: "+err.Error())
}

// answer writes v as JSON on the API, else page name of v.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, name string, v any) {
	if isAPI(r) {
		w.Header().Set("Content-Type", "application/json")
		_ = statusview.WriteJSON(w, v)
		return
	}
	s.pages.render(w, http.StatusOK, name, v)
}

func isAPI(r *http.Request) bool { return len(r.URL.Path) >= 5 && r.URL.Path[:5] == "/api/" }

// guard runs h with the viewer of the request, or refuses it.
func (s *Server) guard(h func(w http.ResponseWriter, r *http.Request, v *viewer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, code, msg := s.o.Auth.identify(r)
		if v == nil {
			if code == http.StatusUnauthorized && s.o.Auth.passwords != nil {
				w.Header().Set("WWW-Authenticate", `Basic realm="aso", charset="UTF-8"`)
			}
			s.refuse(w, r, code, msg)
			return
		}
		h(w, r, v)
	})
}
