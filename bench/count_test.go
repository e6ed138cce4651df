package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// queued opens a memfile store holding n requests of the bench user.
func queued(t *testing.T, n int) *memfile.Store {
	t.Helper()
	mf, err := memfile.Open(filepath.Join(t.TempDir(), "state.aso"), state.Config{Agent: state.Agent{User: benchUser, Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	if _, err := mf.Enqueue(context.Background(), requests(n)); err != nil {
		t.Fatal(err)
	}
	return mf
}

// TestCounter_Memfile: each call is charged the fsyncs and records it
// made, and the counted store keeps the multi-job ability the agent uses.
func TestCounter_Memfile(t *testing.T) {
	ctx := context.Background()
	mf := queued(t, 4)
	c := newCounter(mf)
	s := counted(mf, c)
	ts, err := s.NewTransfers(ctx, 10)
	if err != nil || len(ts) != 4 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	m, ok := state.As[state.MultiSubmitter](s)
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
	h := c.hooks()
	ctx, err := h.Before(context.Background(), "SetTerminalState")
	if err != nil {
		t.Fatal(err)
	}
	get(ctx)
	get(ctx)
	h.After(ctx, "SetTerminalState", state.Call{Items: 7})
	get(context.Background())
	got := c.snapshot()
	if s := got["SetTerminalState"]; s.Calls != 1 || s.Items != 7 || s.RoundTrips != 2 {
		t.Errorf("SetTerminalState counted %+v, want 1 call, 7 items, 2 requests", s)
	}
	if o := got["open"]; o.RoundTrips != 1 {
		t.Errorf("requests outside a call counted %+v, want 1", o)
	}
}

// pagedMemfile is a memfile store that lists active transfers a few jobs
// at a time (state.ActivePager), by filtering ActiveTransfers, until the
// store has the ability itself.
type pagedMemfile struct{ *memfile.Store }

func (p pagedMemfile) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	jobs, err := p.ActiveTransfers(ctx, user)
	refs := make([]state.JobRef, len(jobs))
	for i, j := range jobs {
		refs[i] = state.JobRef{ID: j.ID, Transfers: len(j.Transfers)}
	}
	return refs, err
}

func (p pagedMemfile) ActiveTransfersOf(ctx context.Context, user string, ids []string) ([]state.Job, error) {
	jobs, err := p.ActiveTransfers(ctx, user)
	var out []state.Job
	for _, j := range jobs {
		if slices.Contains(ids, j.ID) {
			out = append(out, j)
		}
	}
	return out, err
}

// TestCounter_Paged: the counted store keeps state.ActivePager next to
// state.MultiSubmitter, and its calls are counted in the monitor phase.
func TestCounter_Paged(t *testing.T) {
	ctx := context.Background()
	mf := queued(t, 5)
	ts, err := mf.NewTransfers(ctx, 10)
	if err != nil || len(ts) != 5 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	for i, job := range []string{"job-a", "job-b"} {
		var cs []state.Commit
		for _, tr := range ts[i*3 : min(len(ts), i*3+3)] {
			cs = append(cs, state.Commit{Transfer: tr, SourcePFN: "davs://src/" + tr.ID, DestPFN: "davs://dst/" + tr.ID})
		}
		if _, err := mf.SetTransferID(ctx, cs, job); err != nil {
			t.Fatal(err)
		}
	}
	c := newCounter(mf)
	s := counted(pagedMemfile{mf}, c)
	if _, ok := state.As[state.MultiSubmitter](s); !ok {
		t.Error("the counted paged store lost state.MultiSubmitter")
	}
	p, ok := state.As[state.ActivePager](s)
	if !ok {
		t.Fatal("the counted paged store lost state.ActivePager")
	}
	refs, err := p.ActiveJobs(ctx, benchUser)
	if err != nil || len(refs) != 2 {
		t.Fatalf("ActiveJobs: %+v, %v", refs, err)
	}
	jobs, err := p.ActiveTransfersOf(ctx, benchUser, []string{"job-b"})
	if err != nil || len(jobs) != 1 || len(jobs[0].Transfers) != 2 {
		t.Fatalf("ActiveTransfersOf(job-b): %+v, %v", jobs, err)
	}
	got := c.snapshot()
	if j := got["ActiveJobs"]; j.Calls != 1 || j.Items != 0 || phaseOf["ActiveJobs"] != "monitor" {
		t.Errorf("ActiveJobs counted %+v in phase %q, want 1 call, 0 items, monitor", j, phaseOf["ActiveJobs"])
	}
	if o := got["ActiveTransfersOf"]; o.Calls != 1 || o.Items != 2 || phaseOf["ActiveTransfersOf"] != "monitor" {
		t.Errorf("ActiveTransfersOf counted %+v in phase %q, want 1 call, 2 items, monitor", o, phaseOf["ActiveTransfersOf"])
	}
	if _, ok := state.As[state.ActivePager](counted(mf, c)); ok != isPager(mf) {
		t.Errorf("counted memfile store: ActivePager %v, the store itself %v", ok, isPager(mf))
	}
}

func isPager(s any) bool { _, ok := s.(state.ActivePager); return ok }

// TestTraceLog: a request's line names the call, the method, the path
// without the database and the query (no user information, no view keys),
// whether documents were asked for, and the status.
func TestTraceLog(t *testing.T) {
	var b strings.Builder
	tl := newTraceLog(&b)
	r, err := http.NewRequest(http.MethodPost, "http://admin:secret@127.0.0.1:5984/aso/_all_docs?conflicts=true&include_docs=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	tl.add(time.Now(), "NewTransfers", r, 200)
	r, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:5984/aso", nil)
	tl.add(time.Now(), "open", r, 404)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "start_s\tcall\tmethod\tpath\tdocs\tstatus\tseconds" {
		t.Fatalf("trace:\n%s", b.String())
	}
	for i, want := range [][]string{{"NewTransfers", "POST", "/_all_docs", "true", "200"}, {"open", "GET", "/", "false", "404"}} {
		f := strings.Split(lines[i+1], "\t")
		if len(f) != 7 || strings.Join(f[1:6], " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want fields %v", i+1, lines[i+1], want)
		}
	}
	if strings.Contains(b.String(), "secret") || strings.Contains(b.String(), "conflicts") {
		t.Errorf("the trace carries the URL's user information or query:\n%s", b.String())
	}
}
