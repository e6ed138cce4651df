package ftssim_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/fts/ftssim"
)

func TestSubmit_Invalid(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	ok := transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")
	cases := []struct {
		name string
		body any
		code int
		msg  string
	}{
		{"bad JSON", `{"files": [`, 400, "Badly formatted JSON request"},
		{"no files", map[string]any{"params": map[string]any{}}, 400, "No transfers operations specified"},
		{"not an object", `[{"files": []}]`, 400, "Expecting a dictionary"},
		{"null files", map[string]any{"files": nil}, 400, "No transfers operations specified"},
		{"empty files", map[string]any{"files": []any{}}, 400, "No valid pairs available"},
		{"missing scheme", jobBody(nil, transfer("a.example.org/f", "gsiftp://b.example.org/f")), 400,
			"Invalid value within the request: Missing scheme (a.example.org/f)"},
		{"missing host", jobBody(nil, transfer("gsiftp:///f", "gsiftp://b.example.org/f")), 400,
			"Invalid value within the request: Missing host (gsiftp:///f)"},
		{"missing path", jobBody(nil, transfer("gsiftp://a.example.org", "gsiftp://b.example.org/f")), 400,
			"Invalid value within the request: Missing path (gsiftp://a.example.org)"},
		{"root path", jobBody(nil, transfer("gsiftp://a.example.org/", "gsiftp://b.example.org/f")), 400,
			"Invalid value within the request: Missing path (gsiftp://a.example.org/)"},
		{"local file", jobBody(nil, transfer("file:///etc/hosts", "gsiftp://b.example.org/f")), 400,
			"Invalid value within the request: Can not transfer local files (file:///etc/hosts)"},
		{"missing sources", map[string]any{"files": []any{map[string]any{"destinations": []string{"gsiftp://b/f"}}}}, 400,
			"Missing parameter: 'sources'"},
		{"delete", map[string]any{"delete": []string{"gsiftp://a.example.org/f"}}, 405,
			"Deletion jobs are no longer supported by FTS"},
		{"deterministic without sid", jobBody(map[string]any{"id_generator": "deterministic"}, ok), 400,
			"Need sid for deterministic job id generation"},
		{"overwrite flags", jobBody(map[string]any{"overwrite": true, "overwrite_on_retry": true}, ok), 400,
			"Incompatible overwrite flags used at the same time"},
		{"bad retry", jobBody(map[string]any{"retry": "many"}, ok), 400,
			"Invalid value within the request: invalid literal for int() with base 10: 'many'"},
		{"two replicas of two files", map[string]any{"files": []any{
			map[string]any{"sources": []string{"gsiftp://a/1", "gsiftp://c/1"}, "destinations": []string{"gsiftp://b/1"}},
			ok,
		}}, 400, "Multiple replica jobs must only have one unique file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(http.MethodPost, "/jobs", c.body)
			wantEq(t, "code", r.code, c.code)
			wantEq(t, "body", r.obj(t), map[string]any{"status": statusLine(c.code), "message": c.msg})
		})
	}
	wantEq(t, "files received after refusals", len(f.srv.Files()), 0)
}

func statusLine(code int) string {
	switch code {
	case 400:
		return "400 Bad Request"
	case 405:
		return "405 Method Not Allowed"
	}
	return http.StatusText(code)
}

func TestSubmit_Params(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	src, dst := "gsiftp://a.example.org/f", "gsiftp://b.example.org/f"
	t.Run("defaults", func(t *testing.T) {
		j := f.do(http.MethodGet, "/jobs/"+f.submit(jobBody(nil, transfer(src, dst))), nil).obj(t)
		wantEq(t, "priority", j["priority"], 3)
		wantEq(t, "retry", j["retry"], 0)
		wantEq(t, "retry_delay", j["retry_delay"], 0)
		wantEq(t, "verify_checksum", j["verify_checksum"], "n")
		wantEq(t, "overwrite_flag", j["overwrite_flag"], false)
		wantEq(t, "job_type", j["job_type"], "N")
		wantEq(t, "max_time_in_queue", j["max_time_in_queue"], nil)
		wantEq(t, "job_metadata", j["job_metadata"], map[string]any{"auth_method": "oauth2"})
		wantEq(t, "vo_name", j["vo_name"], "cms")
	})
	t.Run("given", func(t *testing.T) {
		tr := transfer(src, dst)
		tr["checksum"] = "ADLER32:0a1b2c3d"
		tr["metadata"] = "label-1"
		tr["filesize"] = 1234
		id := f.submit(jobBody(map[string]any{
			"verify_checksum": true, "overwrite": true, "retry": 3, "retry_delay": 60, "priority": 9,
			"max_time_in_queue": "30m", "job_metadata": map[string]any{"issuer": "aso"}, "timeout": 3600, "nostreams": 1,
		}, tr))
		j := f.do(http.MethodGet, "/jobs/"+id, nil).obj(t)
		wantEq(t, "priority clamped", j["priority"], 5)
		wantEq(t, "retry", j["retry"], 3)
		wantEq(t, "retry_delay", j["retry_delay"], 60)
		wantEq(t, "verify_checksum", j["verify_checksum"], "b")
		wantEq(t, "overwrite_flag", j["overwrite_flag"], true)
		wantEq(t, "max_time_in_queue", j["max_time_in_queue"], f.clk.Now().Unix()+1800)
		wantEq(t, "job_metadata", j["job_metadata"], map[string]any{"issuer": "aso", "auth_method": "oauth2"})
		wantEq(t, "internal_job_params", j["internal_job_params"], "nostreams:1,timeout:3600")
		fl := f.do(http.MethodGet, "/jobs/"+id+"/files", nil).list(t)[0].(map[string]any)
		wantEq(t, "checksum", fl["checksum"], "ADLER32:0a1b2c3d")
		wantEq(t, "file_metadata", fl["file_metadata"], map[string]any{"label": "label-1"})
		wantEq(t, "user_filesize", fl["user_filesize"], 1234)
	})
	t.Run("max_time_in_queue in hours and days", func(t *testing.T) {
		for v, secs := range map[any]int64{2: 7200, "1d": 86400, "45s": 45} {
			j := f.do(http.MethodGet, "/jobs/"+f.submit(jobBody(map[string]any{"max_time_in_queue": v}, transfer(src, dst))), nil).obj(t)
			wantEq(t, "max_time_in_queue", j["max_time_in_queue"], f.clk.Now().Unix()+secs)
		}
	})
	t.Run("checksum given without verification is checked at the target", func(t *testing.T) {
		tr := transfer(src, dst)
		tr["checksum"] = "ADLER32:0a1b2c3d"
		j := f.do(http.MethodGet, "/jobs/"+f.submit(jobBody(map[string]any{"verify_checksum": false}, tr)), nil).obj(t)
		wantEq(t, "verify_checksum", j["verify_checksum"], "t")
	})
	t.Run("SEs differ", func(t *testing.T) {
		j := f.do(http.MethodGet, "/jobs/"+f.submit(jobBody(nil, transfer(src, dst), transfer("root://c.example.org//f", dst))), nil).obj(t)
		wantEq(t, "source_se", j["source_se"], nil)
		wantEq(t, "dest_se", j["dest_se"], "gsiftp://b.example.org")
	})
	t.Run("content types", func(t *testing.T) {
		for ct, want := range map[string]string{
			"text/plain":                        "Expecting application/json or application/x-www-form-urlencoded",
			"application/x-www-form-urlencoded": "No transfers operations specified",
		} {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/jobs", strings.NewReader("a=b"))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := reply{code: resp.StatusCode, body: body}
			wantEq(t, ct, r.obj(t), map[string]any{"status": "400 Bad Request", "message": want})
		}
	})
	t.Run("PUT is a submission", func(t *testing.T) {
		r := call(t, f.srv.Client(), http.MethodPut, f.srv.URL+"/jobs", testToken, mustJSON(jobBody(nil, transfer(src, dst))))
		wantEq(t, "code", r.code, 200)
	})
}
