package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/serve/servetest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// serveMain is `bench -serve` (make bench-serve): what aso serve costs at
// N transfers (five users, three links, every state) on each backend: the
// time to render the overview with an empty cache (the store's counts and
// locks read) and with a warm one, and the requests to the store and the
// time of one /metrics scrape, then of list pages (the first, one half-way
// through the transfers, a filtered one) and a transfer page.
func serveMain(args []string) int {
	fs := flag.NewFlagSet("bench -serve", flag.ContinueOnError)
	n := fs.Int("n", 100000, "transfers in the store")
	backends := fs.String("backends", "memfile,couch", "state backends, comma-separated: memfile, couch")
	aso := fs.String("aso", "bin/aso", "the aso binary (for aso init)")
	if fs.Parse(args) != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows := []string{"backend\ttransfers\tfill\toverview, cold\toverview, warm\t/metrics requests\t/metrics time\tfirst list page\tlist page, mid-way\tlist page, failed no_space\ttransfer page\t"}
	for _, b := range strings.Split(*backends, ",") {
		row, err := benchServe(ctx, strings.TrimSpace(b), *n, *aso)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "bench: %s\n", strings.ReplaceAll(row, "\t", " | "))
		rows = append(rows, row)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	return map[bool]int{true: 0, false: 1}[tw.Flush() == nil]
}

// countingRT counts the HTTP requests of a CouchDB store.
type countingRT struct{ n atomic.Int64 }

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// benchServe fills a store of backend with n transfers and measures one
// row of the table.
func benchServe(ctx context.Context, backend string, n int, aso string) (string, error) {
	clk := &servetest.Clock{T: time.Now().Add(-12 * time.Hour)}
	rt := &countingRT{}
	var open func(user string) (state.Store, error)
	var reader func() (state.Store, error)
	switch backend {
	case "memfile":
		dir, err := os.MkdirTemp("", "aso-bench-serve-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "s.aso")
		open = func(user string) (state.Store, error) {
			return memfile.Open(path, state.Config{Agent: state.Agent{User: user, Owner: "bench:1:fill"}, Now: clk.Now})
		}
		reader = func() (state.Store, error) {
			return memfile.OpenOptions(path, state.Config{}, memfile.Options{ReadOnly: true})
		}
	case "couch":
		srv, err := startCouch(ctx, 6144)
		if err != nil {
			return "", err
		}
		defer srv.stop()
		db, err := srv.newDB(ctx, aso)
		if err != nil {
			return "", err
		}
		u := srv.dbURL(db)
		open = func(user string) (state.Store, error) {
			return couch.Open(ctx, couch.Options{URL: u}, state.Config{Agent: state.Agent{User: user, Owner: "bench:1:fill"}, Now: clk.Now})
		}
		reader = func() (state.Store, error) {
			return couch.Open(ctx, couch.Options{URL: u, Transport: rt}, state.Config{})
		}
	default:
		return "", fmt.Errorf("-backends: unknown backend %q", backend)
	}
	start := time.Now()
	if err := servetest.Fill(ctx, open, n/len(servetest.Users), clk); err != nil {
		return "", err
	}
	fill := time.Since(start)
	st, err := reader()
	if err != nil {
		return "", err
	}
	defer st.Close()
	return measureServe(st, rt, backend, n, fill)
}

// measureServe times the pages of a server on st.
func measureServe(st state.Store, rt *countingRT, backend string, n int, fill time.Duration) (string, error) {
	now := time.Now()
	s, err := serve.New(serve.Options{Store: st, Now: func() time.Time { return now }})
	if err != nil {
		return "", err
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	page := func(path string) (time.Duration, error) {
		t0 := time.Now()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("%s: %s", path, resp.Status)
		}
		return time.Since(t0), nil
	}
	// the views are built by the first query on CouchDB: outside the figures
	if _, err := st.Counts(context.Background(), state.CountsOptions{HoursSince: now, MinutesSince: now}); err != nil {
		return "", err
	}
	cold, err := page("/")
	if err != nil {
		return "", err
	}
	warm, err := page("/")
	if err != nil {
		return "", err
	}
	now = now.Add(time.Hour) // past the cache's TTL: a scrape reads the store again
	before := rt.n.Load()
	scrape, err := page("/metrics")
	if err != nil {
		return "", err
	}
	reqs := rt.n.Load() - before
	first, err := page("/transfers") // CouchDB builds the Mango index of List on its first query
	if err != nil {
		return "", err
	}
	all, err := page("/transfers?after=" + url.QueryEscape(state.At(now.Add(-6*time.Hour)).String()+","+strings.Repeat("0", 64)))
	if err != nil {
		return "", err
	}
	list, err := page("/transfers?in-state=failed&error-class=no_space")
	if err != nil {
		return "", err
	}
	id, err := firstID(hs.URL)
	if err != nil {
		return "", err
	}
	one, err := page("/transfers/" + id)
	if err != nil {
		return "", err
	}
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	reqText := fmt.Sprint(reqs)
	if backend == "memfile" {
		reqText = "0 (a file)"
	}
	return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", backend, n, r(fill), r(cold), r(warm), reqText, r(scrape), r(first), r(all), r(list), r(one)), nil
}

// firstID returns the ID of the first transfer of the server's list.
func firstID(base string) (string, error) {
	resp, err := http.Get(base + "/api/transfers?limit=1")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		ID string `json:"_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.ID == "" {
		return "", fmt.Errorf("no transfer to show: %v", err)
	}
	return t.ID, nil
}
