package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// TestCounter_Memfile: each call is charged the fsyncs and records it
// made, and the counted store keeps the multi-job ability the agent uses.
func TestCounter_Memfile(t *testing.T) {
	ctx := context.Background()
	mf, err := memfile.Open(filepath.Join(t.TempDir(), "state.aso"), state.Config{Agent: state.Agent{User: benchUser, Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if _, err := mf.Enqueue(ctx, requests(4)); err != nil {
		t.Fatal(err)
	}
	c := newCounter(mf)
	s := counted(mf, c)
	ts, err := s.NewTransfers(ctx, 10)
	if err != nil || len(ts) != 4 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	m, ok := s.(state.MultiSubmitter)
	if !ok {
		t.Fatal("the counted memfile store lost state.MultiSubmitter")
	}
	if _, err := m.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: ts[:2], SID: "a"}, {Transfers: ts[2:], SID: "b"}}); err != nil {
		t.Fatal(err)
	}
	got := c.snapshot()
	if n := got["NewTransfers"]; n.Calls != 1 || n.Items != 4 || n.RoundTrips != 1 || n.Records != 1 {
		t.Errorf("NewTransfers counted %+v, want 1 call, 4 items, 1 fsync, 1 record", n)
	}
	if p := got["PrepareSubmit"]; p.Calls != 1 || p.Items != 4 || p.RoundTrips != 1 || p.Records != 1 {
		t.Errorf("PrepareSubmits counted %+v, want 1 call, 4 items, 1 fsync, 1 record", p)
	}
}

// TestCounter_HTTP: HTTP requests are charged to the call in their
// context, and to "open" outside any call.
func TestCounter_HTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	c := newCounter(nil)
	hc := &http.Client{Transport: c.wrap(http.DefaultTransport)}
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	err := c.do(context.Background(), "SetTerminalState", func() int { return 7 }, func(ctx context.Context) error {
		get(ctx)
		get(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	get(context.Background())
	got := c.snapshot()
	if s := got["SetTerminalState"]; s.Calls != 1 || s.Items != 7 || s.RoundTrips != 2 {
		t.Errorf("SetTerminalState counted %+v, want 1 call, 7 items, 2 requests", s)
	}
	if o := got["open"]; o.RoundTrips != 1 {
		t.Errorf("requests outside a call counted %+v, want 1", o)
	}
}
