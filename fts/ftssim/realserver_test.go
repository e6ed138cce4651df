package ftssim_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// The tests of this file pin the simulator to what a real fts-rest-flask
// 3.13 server answered where an earlier simulator was kinder (see
// testdata/fts/README.md), so that it cannot drift back.

// Values computed independently with Python for the PKI's user DN
// "/DC=org/DC=asyncstageout/OU=Users/CN=aso test user":
//
//	hashlib.sha1(dn.encode()).hexdigest()[:16]                   plain proxy
//	hashlib.sha1((dn + "/cms/Role=NULL/Capability=NULL").encode()).hexdigest()[:16]
//	uuid.uuid5(uuid.uuid5(uuid.UUID(BASE_ID), vo), "sid-1")
const (
	plainDlgID   = "d6b13ca02589043b"
	vomsDlgID    = "daa74af57e9000f4"
	cmsFQAN      = "/cms/Role=NULL/Capability=NULL"
	plainSIDJob  = "80f013d2-5381-5ed4-9ab0-5d5a561b9638"
	cmsVOsID     = "d5bdc1ae-600f-58dd-a94f-5c16b07974fd"
	modernUA     = "fts-rest-client/3.13.1"
	legacyUA     = "fts-rest-client/3.11.2"
	otherTokenID = "other-token"
)

// identities is a TLS simulator with OAuth2 and four identities: a plain
// proxy, a VOMS proxy of the same user (another identity: its delegation id
// covers the FQANs), and two bearer tokens.
type identities struct {
	srv          *ftssim.Server
	clk          *clock
	plain, voms  *http.Client
	token, other func(method, path string, body any) reply
}

func newIdentities(t *testing.T, opts ftssim.Options) *identities {
	t.Helper()
	p := ftstest.NewPKI(t)
	clk := newClock()
	opts.Now, opts.OAuth2 = clk.Now, true
	srv := tlsServer(t, p, opts)
	tokenCall := func(tok string) func(string, string, any) reply {
		return func(method, path string, body any) reply {
			return call(t, srv.Client(), method, srv.URL+path, tok, body)
		}
	}
	return &identities{
		srv: srv, clk: clk,
		plain: certClient(t, p, p.ProxyPEM),
		voms:  certClient(t, p, ftstest.NewProxy(t, p, 12*time.Hour, cmsFQAN)),
		token: tokenCall(testToken), other: tokenCall(otherTokenID),
	}
}

func (ids *identities) cert(t *testing.T, c *http.Client, method, path string, body any) reply {
	t.Helper()
	return call(t, c, method, ids.srv.URL+path, "", body)
}

func submitAs(t *testing.T, r reply) string {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("submit: %d %s", r.code, r.body)
	}
	return r.obj(t)["job_id"].(string)
}

func TestReal_DoubleSlashRoutes(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Hour})
	r := f.do(http.MethodGet, "//", nil)
	wantEq(t, "GET // code", r.code, 200)
	wantEq(t, "GET // api", r.obj(t)["api"], map[string]any{"major": 3, "minor": 13, "patch": 4})
	r = f.do(http.MethodPost, "//jobs", jobBody(nil, transfer("gsiftp://a.example.org/f", "davs://b.example.org/f")))
	id := submitAs(t, r)
	wantEq(t, "GET //jobs/{id}", f.do(http.MethodGet, "//jobs/"+id, nil).obj(t)["job_state"], "SUBMITTED")
	wantEq(t, "GET //jobs//{id}/files", len(f.do(http.MethodGet, "//jobs//"+id+"/files", nil).list(t)), 1)
	wantEq(t, "GET //whoami", f.do(http.MethodGet, "//whoami", nil).obj(t)["method"], "oauth2")
	r = f.do(http.MethodDelete, "//jobs/"+id, nil)
	wantEq(t, "DELETE //jobs/{id}", r.obj(t)["job_state"], "CANCELED")
	wantEq(t, "counted as routes", f.srv.Requests()["unknown"], 0)
}

func TestReal_PerIdentityAuthorization(t *testing.T) {
	ids := newIdentities(t, ftssim.Options{QueueDelay: time.Hour})
	body := jobBody(nil, transfer("gsiftp://a.example.org/f", "davs://b.example.org/f"))
	plainJob := submitAs(t, ids.cert(t, ids.plain, http.MethodPost, "/jobs", body))
	tokenJob := submitAs(t, ids.token(http.MethodPost, "/jobs", body))

	t.Run("owner reads", func(t *testing.T) {
		wantEq(t, "plain", ids.cert(t, ids.plain, http.MethodGet, "/jobs/"+plainJob, nil).code, 200)
		wantEq(t, "token", ids.token(http.MethodGet, "/jobs/"+tokenJob, nil).code, 200)
	})
	t.Run("another identity gets 403 with an error entry", func(t *testing.T) {
		for name, r := range map[string]reply{
			"voms proxy of the same user": ids.cert(t, ids.voms, http.MethodGet, "/jobs/"+plainJob, nil),
			"token":                       ids.token(http.MethodGet, "/jobs/"+plainJob, nil),
			"plain proxy on a token job":  ids.cert(t, ids.plain, http.MethodGet, "/jobs/"+tokenJob, nil),
			"another token":               ids.other(http.MethodGet, "/jobs/"+tokenJob, nil),
		} {
			if r.code != http.StatusForbidden {
				t.Fatalf("%s: %d %s, want 403", name, r.code, r.body)
			}
			wantShape(t, "forbidden_job_403.json", r)
			job := plainJob
			if strings.Contains(name, "token job") || name == "another token" {
				job = tokenJob
			}
			wantEq(t, name, r.obj(t), map[string]any{"job_id": job, "http_status": "403 Forbidden",
				"http_message": fmt.Sprintf("Not enough permissions to check the job \"%s\"", job)})
		}
	})
	t.Run("bulk read is 207 with a 403 entry", func(t *testing.T) {
		r := ids.token(http.MethodGet, "/jobs/"+tokenJob+","+plainJob+"?files=file_state", nil)
		wantEq(t, "code", r.code, http.StatusMultiStatus)
		l := r.list(t)
		wantEq(t, "own entry", l[0].(map[string]any)["http_status"], "200 Ok")
		wantEq(t, "other entry", l[1], map[string]any{"job_id": plainJob, "http_status": "403 Forbidden",
			"http_message": fmt.Sprintf("Not enough permissions to check the job \"%s\"", plainJob)})
	})
	t.Run("files, dm and fields are refused too", func(t *testing.T) {
		for _, path := range []string{"/files", "/dm", "/job_state"} {
			if r := ids.other(http.MethodGet, "/jobs/"+tokenJob+path, nil); r.code != http.StatusForbidden {
				t.Errorf("GET %s of another's job: %d %s", path, r.code, r.body)
			}
		}
	})
	t.Run("cancel is 403 and leaves the job alone", func(t *testing.T) {
		r := ids.other(http.MethodDelete, "/jobs/"+tokenJob, nil)
		wantEq(t, "code", r.code, http.StatusForbidden)
		wantEq(t, "message", r.obj(t)["http_message"], fmt.Sprintf("Not enough permissions to cancel the job \"%s\"", tokenJob))
		r = ids.cert(t, ids.voms, http.MethodDelete, "/jobs/"+plainJob+","+tokenJob, nil)
		wantEq(t, "bulk cancel", r.code, http.StatusMultiStatus)
		if r := ids.other(http.MethodDelete, "/jobs/"+tokenJob+"/files/1", nil); r.code != http.StatusForbidden {
			t.Errorf("cancel of another's file: %d %s", r.code, r.body)
		}
		for _, j := range []reply{ids.token(http.MethodGet, "/jobs/"+tokenJob, nil), ids.cert(t, ids.plain, http.MethodGet, "/jobs/"+plainJob, nil)} {
			o := j.obj(t)
			wantEq(t, "state after another's cancel", o["job_state"], "SUBMITTED")
			wantEq(t, "cancel_job after another's cancel", o["cancel_job"], false)
		}
	})
	t.Run("listing shows only one's own jobs", func(t *testing.T) {
		wantEq(t, "other token's list", ids.other(http.MethodGet, "/jobs", nil).list(t), []any{})
		l := ids.token(http.MethodGet, "/jobs", nil).list(t)
		wantEq(t, "token's list", len(l), 1)
	})
}

func TestReal_Identity(t *testing.T) {
	ids := newIdentities(t, ftssim.Options{QueueDelay: time.Hour})
	t.Run("voms proxy", func(t *testing.T) {
		w := ids.cert(t, ids.voms, http.MethodGet, "/whoami", nil).obj(t)
		wantEq(t, "delegation_id", w["delegation_id"], vomsDlgID)
		wantEq(t, "vos", w["vos"], []any{"cms"})
		wantEq(t, "vos_id", w["vos_id"], []any{cmsVOsID})
		wantEq(t, "voms_cred", w["voms_cred"], []any{cmsFQAN})
		if dns, _ := w["dn"].([]any); len(dns) != 2 {
			t.Errorf("dn = %v, want the user's DN and the proxy's", w["dn"])
		}
	})
	t.Run("plain proxy: the delegation id is a virtual VO", func(t *testing.T) {
		w := ids.cert(t, ids.plain, http.MethodGet, "/whoami", nil).obj(t)
		wantEq(t, "delegation_id", w["delegation_id"], plainDlgID)
		wantEq(t, "vos", w["vos"], []any{plainDlgID})
		wantEq(t, "voms_cred", w["voms_cred"], []any{})
		body := jobBody(map[string]any{"id_generator": "deterministic", "sid": "sid-1"}, transfer("gsiftp://a.example.org/f", "davs://b.example.org/f"))
		r := ids.cert(t, ids.plain, http.MethodPost, "/jobs", body)
		wantEq(t, "deterministic id from the virtual VO", submitAs(t, r), plainSIDJob)
		j := ids.cert(t, ids.plain, http.MethodGet, "/jobs/"+plainSIDJob, nil).obj(t)
		wantEq(t, "vo_name", j["vo_name"], plainDlgID)
		wantEq(t, "cred_id", j["cred_id"], plainDlgID)
	})
	t.Run("a bearer token without OAuth2 is 400", func(t *testing.T) {
		srv := ftstest.NewServer(t, ftssim.Options{})
		r := call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", testToken, nil)
		wantEq(t, "code", r.code, http.StatusBadRequest)
		wantHTML(t, "unsupported_oauth2_400.html", r)
		if !strings.Contains(string(r.body), "Unsupported authentication method: method=OAuth2") {
			t.Errorf("body %s", r.body)
		}
	})
}

func TestReal_Delegation(t *testing.T) {
	p := ftstest.NewPKI(t)
	srv := tlsServer(t, p, ftssim.Options{RequireDelegation: true})
	c := certClient(t, p, p.ProxyPEM)
	get := func(ua string) reply {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/delegation/"+plainDlgID, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", ua)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return reply{code: resp.StatusCode, body: raw, hdr: resp.Header}
	}
	for ua, want := range map[string]string{modernUA: "[]\n", "fts-python-cli/3.12.0": "[]\n", legacyUA: "null\n", "Go-http-client/1.1": "null\n"} {
		if r := get(ua); r.code != 200 || string(r.body) != want {
			t.Errorf("no delegation, User-Agent %q: %d %q, want 200 %q", ua, r.code, r.body, want)
		}
	}

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/jobs", strings.NewReader(`{"files":[{"sources":["gsiftp://a.example.org/f"],"destinations":["davs://b.example.org/f"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantEq(t, "status line of a submission without delegation", resp.Status, "419 Authentication Timeout")
}

func TestReal_DataManagementAndKeys(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Hour})
	id := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/f", "davs://b.example.org/f")))
	r := f.do(http.MethodGet, "/jobs/"+id+"/dm", nil)
	wantEq(t, "dm code", r.code, 200)
	wantShape(t, "dm.json", r)
	wantEq(t, "dm", r.list(t), []any{})

	j := f.do(http.MethodGet, "/jobs/"+id, nil).obj(t)
	for k, want := range map[string]any{"cancel_job": false, "archive_timeout": -1, "source_spacetoken": "", "destination_spacetoken": ""} {
		wantEq(t, "job "+k, j[k], want)
	}
	fl := f.do(http.MethodGet, "/jobs/"+id+"/files", nil).list(t)[0].(map[string]any)
	for k, want := range map[string]any{"filesize": nil, "throughput": nil, "tx_duration": nil, "scitag": nil,
		"src_token_id": nil, "dst_token_id": nil, "file_state_initial": "SUBMITTED"} {
		if v, ok := fl[k]; !ok {
			t.Errorf("file key %s missing", k)
		} else {
			wantEq(t, "queued file "+k, v, want)
		}
	}
	if fid, _ := fl["file_id"].(float64); fid < 1e6 {
		t.Errorf("file_id %v: want a large integer, as on a server that has run for years", fl["file_id"])
	}
}

func TestReal_DatabaseDown(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	f.srv.SetDatabaseDown(true)
	for _, path := range []string{"/", "/whoami", "/jobs"} {
		r := f.do(http.MethodGet, path, nil)
		wantEq(t, path+" code", r.code, http.StatusInternalServerError)
		wantEq(t, path+" content type", r.hdr.Get("Content-Type"), "text/html; charset=iso-8859-1")
		if want := string(golden(t, "internal_500.html")); string(r.body) != want {
			t.Errorf("%s body:\n%s\nwant Apache's page:\n%s", path, r.body, want)
		}
	}
	f.srv.SetDatabaseDown(false)
	wantEq(t, "after the outage", f.do(http.MethodGet, "/whoami", nil).code, 200)
	f.srv.FailDatabase(1)
	wantEq(t, "one failure", f.do(http.MethodGet, "/whoami", nil).code, 500)
	wantEq(t, "then back", f.do(http.MethodGet, "/whoami", nil).code, 200)
}
