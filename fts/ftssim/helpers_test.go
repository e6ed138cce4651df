package ftssim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// clock is a manual simulated clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// reply is a decoded HTTP reply.
type reply struct {
	code int
	body []byte
	hdr  http.Header
}

func (r reply) json(t testing.TB) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("reply %d is not JSON: %v: %s", r.code, err, r.body)
	}
	return v
}

func (r reply) obj(t testing.TB) map[string]any {
	t.Helper()
	m, ok := r.json(t).(map[string]any)
	if !ok {
		t.Fatalf("reply %d is not a JSON object: %s", r.code, r.body)
	}
	return m
}

func (r reply) list(t testing.TB) []any {
	t.Helper()
	l, ok := r.json(t).([]any)
	if !ok {
		t.Fatalf("reply %d is not a JSON array: %s", r.code, r.body)
	}
	return l
}

const testToken = "test-token"

// call sends a request with the test bearer token (unless token is "").
func call(t testing.TB, c *http.Client, method, url, token string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{code: resp.StatusCode, body: raw, hdr: resp.Header}
}

// fixture is a simulator on a manual clock, with a token client.
type fixture struct {
	srv *ftssim.Server
	clk *clock
	t   testing.TB
}

func newFixture(t testing.TB, opts ftssim.Options) *fixture {
	t.Helper()
	clk := newClock()
	opts.Now = clk.Now
	opts.OAuth2 = true // the fixture authenticates with a bearer token
	return &fixture{srv: ftstest.NewServer(t, opts), clk: clk, t: t}
}

func (f *fixture) do(method, path string, body any) reply {
	f.t.Helper()
	return call(f.t, f.srv.Client(), method, f.srv.URL+path, testToken, body)
}

// submit submits a job and returns its id, failing the test otherwise.
func (f *fixture) submit(body any) string {
	f.t.Helper()
	r := f.do(http.MethodPost, "/jobs", body)
	if r.code != http.StatusOK {
		f.t.Fatalf("submit: %d %s", r.code, r.body)
	}
	id, _ := r.obj(f.t)["job_id"].(string)
	if id == "" {
		f.t.Fatalf("submit: no job_id in %s", r.body)
	}
	return id
}

// job fetches one job with all file fields.
func (f *fixture) job(id string) map[string]any {
	f.t.Helper()
	r := f.do(http.MethodGet, "/jobs/"+id+"?files=file_id,file_state,reason,retry,start_time,finish_time,filesize,tx_duration,throughput,transfer_host,source_surl,dest_surl", nil)
	if r.code != http.StatusOK {
		f.t.Fatalf("status %s: %d %s", id, r.code, r.body)
	}
	return r.obj(f.t)
}

func files(t testing.TB, job map[string]any) []map[string]any {
	t.Helper()
	raw, _ := job["files"].([]any)
	out := make([]map[string]any, len(raw))
	for i, f := range raw {
		out[i] = f.(map[string]any)
	}
	return out
}

// transfer is a files[] entry.
func transfer(src, dst string) map[string]any {
	return map[string]any{"sources": []string{src}, "destinations": []string{dst}}
}

// jobBody is a submission of the given files with params.
func jobBody(params map[string]any, fs ...map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"files": fs, "params": params}
}

var (
	ftsTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$`)
	uuid1RE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func wantEq(t testing.TB, what string, got, want any) {
	t.Helper()
	if gj, wj := mustJSON(got), mustJSON(want); gj != wj {
		t.Fatalf("%s = %s, want %s", what, gj, wj)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}
