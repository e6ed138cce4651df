package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// made, under its op's name.
func TestCounter_Memfile(t *testing.T) {
	ctx := context.Background()
	mf := queued(t, 4)
	c := newCounter(mf)
	s := counted(mf, c)
	cl, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10})
	ts := cl.Transfers
	if err != nil || len(ts) != 4 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	if _, err := s.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: ts[:2], SID: "a"}, {Transfers: ts[2:], SID: "b"}}); err != nil {
		t.Fatal(err)
	}
	got := c.snapshot()
	if n := got["new_transfers"]; n.Calls != 1 || n.Items != 4 || n.RoundTrips != 1 || n.Records != 1 {
		t.Errorf("NewTransfers counted %+v, want 1 call, 4 items, 1 fsync, 1 record", n)
	}
	if p := got["prepare_submit"]; p.Calls != 1 || p.Items != 4 || p.RoundTrips != 1 || p.Records != 1 {
		t.Errorf("PrepareSubmits counted %+v, want 1 call, 4 items, 1 fsync, 1 record", p)
	}
}

// TestPhaseOf_EveryOp: every call of the contract is charged to a phase.
func TestPhaseOf_EveryOp(t *testing.T) {
	for _, op := range state.Ops() {
		if !slices.Contains(Phases, phaseOf[op.String()]) {
			t.Errorf("op %s has phase %q", op, phaseOf[op.String()])
		}
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
	ctx, err := h.Before(context.Background(), state.OpSetTerminalState)
	if err != nil {
		t.Fatal(err)
	}
	get(ctx)
	get(ctx)
	h.After(ctx, state.OpSetTerminalState, state.Call{Items: 7})
	get(context.Background())
	got := c.snapshot()
	if s := got["set_terminal_state"]; s.Calls != 1 || s.Items != 7 || s.RoundTrips != 2 {
		t.Errorf("SetTerminalState counted %+v, want 1 call, 7 items, 2 requests", s)
	}
	if o := got["open"]; o.RoundTrips != 1 {
		t.Errorf("requests outside a call counted %+v, want 1", o)
	}
}

// TestCounter_Monitor: the listings of active jobs are counted in the
// monitor phase.
func TestCounter_Monitor(t *testing.T) {
	ctx := context.Background()
	mf := queued(t, 5)
	cl, err := mf.NewTransfers(ctx, state.ClaimRequest{Limit: 10})
	ts := cl.Transfers
	if err != nil || len(ts) != 5 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	var jobs []state.CommitJob
	for i, job := range []string{"job-a", "job-b"} {
		var cs []state.Commit
		for _, tr := range ts[i*3 : min(len(ts), i*3+3)] {
			cs = append(cs, state.Commit{Transfer: tr, SourcePFN: "davs://src/" + tr.ID, DestPFN: "davs://dst/" + tr.ID})
		}
		jobs = append(jobs, state.CommitJob{Commits: cs, JobID: job})
	}
	if _, err := mf.SetTransferIDs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	c := newCounter(mf)
	s := counted(mf, c)
	refs, err := s.ActiveJobs(ctx, benchUser)
	if err != nil || len(refs) != 2 {
		t.Fatalf("ActiveJobs: %+v, %v", refs, err)
	}
	got, err := s.ActiveTransfersOf(ctx, benchUser, []string{"job-b"})
	if err != nil || len(got) != 1 || len(got[0].Transfers) != 2 {
		t.Fatalf("ActiveTransfersOf(job-b): %+v, %v", got, err)
	}
	n := c.snapshot()
	if j := n["active_jobs"]; j.Calls != 1 || j.Items != 0 || phaseOf["active_jobs"] != "monitor" {
		t.Errorf("ActiveJobs counted %+v in phase %q, want 1 call, 0 items, monitor", j, phaseOf["active_jobs"])
	}
	if o := n["active_transfers_of"]; o.Calls != 1 || o.Items != 2 || phaseOf["active_transfers_of"] != "monitor" {
		t.Errorf("ActiveTransfersOf counted %+v in phase %q, want 1 call, 2 items, monitor", o, phaseOf["active_transfers_of"])
	}
}

// TestTraceLog: a request's line names the call, the method, the path
// without the database and the query (no user information, no view keys),
// whether documents were asked for, the status, the seconds until the
// headers and until the end of the body; a reply whose body the server
// sends late has its line once the body is read, with that wait in
// body_s and not in seconds.
func TestTraceLog(t *testing.T) {
	const late = 150 * time.Millisecond
	// the server sends the body late after the client has its headers,
	// whatever else the machine does: body_s - seconds >= late
	gotHeaders := make(chan struct{})
	var once sync.Once
	headersSeen := func() { once.Do(func() { close(gotHeaders) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-gotHeaders
		time.Sleep(late) // the rows streamed after the headers
		_, _ = w.Write([]byte(`{"rows":[]}`))
	}))
	defer srv.Close()
	defer headersSeen() // before the close: a handler left waiting would hold it up
	var b strings.Builder
	c := newCounter(nil)
	c.trace = newTraceLog(&b)
	hc := &http.Client{Transport: c.wrap(http.DefaultTransport)}
	u := strings.Replace(srv.URL, "http://", "http://admin:secret@", 1)
	ctx := context.WithValue(context.Background(), callKey{}, &callStart{name: "new_transfers"})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u+"/aso/_all_docs?conflicts=true&include_docs=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 1 {
		t.Errorf("a line was written before the body was read:\n%s", b.String())
	}
	headersSeen()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	r, _ = http.NewRequest(http.MethodGet, u+"/aso", nil)
	resp, err = hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // closed unread: the line is written at the close
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "start_s\tcall\tmethod\tpath\tdocs\tstatus\tseconds\tbody_s" {
		t.Fatalf("trace:\n%s", b.String())
	}
	for i, want := range [][]string{{"new_transfers", "POST", "/_all_docs", "true", "200"}, {"open", "GET", "/", "false", "404"}} {
		f := strings.Split(lines[i+1], "\t")
		if len(f) != 8 || strings.Join(f[1:6], " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want fields %v", i+1, lines[i+1], want)
		}
	}
	f := strings.Split(lines[1], "\t")
	headers, _ := strconv.ParseFloat(f[6], 64)
	body, _ := strconv.ParseFloat(f[7], 64)
	if body-headers < late.Seconds()-0.0002 { // each figure rounded to 0.1 ms
		t.Errorf("headers after %.4f s, body after %.4f s: want the %v the server took after its headers in body_s only", headers, body, late)
	}
	if strings.Contains(b.String(), "secret") || strings.Contains(b.String(), "conflicts") {
		t.Errorf("the trace carries the URL's user information or query:\n%s", b.String())
	}
}
