package ftssim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// goldenDir holds FTS3 replies written from FTS3's source (model/job.py,
// model/file.py, controllers/jobs.py, werkzeug's error pages).
var goldenDir = filepath.Join("..", "..", "testdata", "fts")

// shape describes a JSON value's structure: objects by their keys and the
// shapes of their values, arrays by their first element, scalars by type.
func shape(v any) string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shape(t[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		if len(t) == 0 {
			return "[]"
		}
		return "[" + shape(t[0]) + "...]"
	case nil:
		return "null"
	case bool:
		return "bool"
	case float64:
		return "number"
	case string:
		return "string"
	}
	return fmt.Sprintf("%T", v)
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	return b
}

func wantShape(t *testing.T, name string, r reply) {
	t.Helper()
	var want any
	if err := json.Unmarshal(golden(t, name), &want); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	if got, w := shape(r.json(t)), shape(want); got != w {
		t.Errorf("%s: reply shape differs from the golden\n got: %s\nwant: %s\nreply: %s", name, got, w, r.body)
	}
}

// htmlSkeleton is an HTML page with its message paragraph removed.
var htmlMessage = regexp.MustCompile(`<p>.*</p>`)

func wantHTML(t *testing.T, name string, r reply) {
	t.Helper()
	if !strings.HasPrefix(r.hdr.Get("Content-Type"), "text/html") {
		t.Errorf("%s: Content-Type %q", name, r.hdr.Get("Content-Type"))
	}
	got, want := htmlMessage.ReplaceAllString(string(r.body), "<p></p>"), htmlMessage.ReplaceAllString(string(golden(t, name)), "<p></p>")
	if got != want {
		t.Errorf("%s: page differs\n got: %q\nwant: %q", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	p := ftstest.NewPKI(t)
	clk := newClock()
	srv := tlsServer(t, p, ftssim.Options{Now: clk.Now, RequireDelegation: true, QueueDelay: time.Minute, OAuth2: true})
	tok := func(method, path string, body any) reply {
		return call(t, srv.Client(), method, srv.URL+path, testToken, body)
	}
	cert := certClient(t, p, p.ProxyPEM)
	tr := transfer("gsiftp://eoscmsftp.cern.ch//eos/cms/f.root", "davs://cmsdcadisk.fnal.gov:2880/store/f.root")
	tr["checksum"], tr["filesize"], tr["metadata"] = "ADLER32:0a1b2c3d", 1048576, map[string]any{"transfer_id": "t-1"}
	body := jobBody(map[string]any{"verify_checksum": true, "retry": 2, "job_metadata": map[string]any{"issuer": "aso"},
		"id_generator": "deterministic", "sid": "golden"}, tr)

	r := tok(http.MethodPost, "/jobs", body)
	wantShape(t, "submit.json", r)
	id := r.obj(t)["job_id"].(string)
	clk.Advance(time.Minute)
	wantShape(t, "job.json", tok(http.MethodGet, "/jobs/"+id, nil))
	wantShape(t, "files.json", tok(http.MethodGet, "/jobs/"+id+"/files", nil))
	missing := "00000000-0000-0000-0000-000000000000"
	wantShape(t, "bulk_207.json", tok(http.MethodGet, "/jobs/"+id+","+missing+"?files=file_state,dest_surl,finish_time,start_time,reason,file_metadata", nil))
	wantShape(t, "not_found.json", tok(http.MethodGet, "/jobs/"+missing, nil))
	wantShape(t, "cancel_304.json", tok(http.MethodDelete, "/jobs/"+id, nil))
	wantShape(t, "conflict_409.json", tok(http.MethodPost, "/jobs", body))
	wantShape(t, "bad_request_400.json", tok(http.MethodPost, "/jobs", map[string]any{}))

	body["params"].(map[string]any)["sid"] = "golden-2"
	srv.Fail503(1)
	wantHTML(t, "unavailable_503.html", tok(http.MethodPost, "/jobs", body))
	r = tok(http.MethodPost, "/jobs", body)
	wantEq(t, "after the 503", r.code, 200)
	wantShape(t, "cancel_200.json", tok(http.MethodDelete, "/jobs/"+r.obj(t)["job_id"].(string), nil))

	wantShape(t, "whoami.json", call(t, cert, http.MethodGet, srv.URL+"/whoami", "", nil))
	wantShape(t, "delegation_419.json", call(t, cert, http.MethodPost, srv.URL+"/jobs", "", body))
	wantHTML(t, "forbidden_403.html", call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", "", nil))
}
