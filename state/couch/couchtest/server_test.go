package couchtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// These tests state what the test server does as CouchDB 3 does it (users,
// sessions, _security, validate_doc_update's arguments and refusals); with
// ASO_TEST_COUCHDB_URL set they run against that server, the reference.

func TestMain(m *testing.M) { os.Exit(couchtest.Main(m)) }

// call makes a request, with the user information of u as basic auth, and
// decodes a JSON answer into out (if not nil).
func call(t *testing.T, c *http.Client, method, u, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, couchtest.WithoutAuth(u), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && json.Unmarshal(b, out) != nil {
		t.Fatalf("%s %s: HTTP %d, not JSON: %s", method, couchtest.WithoutAuth(u), resp.StatusCode, b)
	}
	return resp.StatusCode
}

// TestServer_Users: a user's password is stored as CouchDB 3.5 stores it
// (PBKDF2-SHA256, a salt, no clear text), and the user authenticates by
// basic auth or a session cookie; a wrong password is 401.
func TestServer_Users(t *testing.T) {
	base := couchtest.Server(t)
	pass := couchtest.NewUser(t, "test-hashed", "r1", "r2")
	var doc map[string]any
	if code := call(t, nil, http.MethodGet, base+"_users/org.couchdb.user:test-hashed", "", &doc); code != http.StatusOK {
		t.Fatalf("read the user: HTTP %d", code)
	}
	if doc["password"] != nil || doc["password_scheme"] != "pbkdf2" || doc["salt"] == nil || doc["derived_key"] == nil || doc["iterations"] == nil {
		t.Fatalf("stored user: %v; want a PBKDF2 hash and no password", doc)
	}
	if bytes.Contains([]byte(doc["derived_key"].(string)), []byte(pass)) {
		t.Fatal("the derived key holds the password")
	}
	var s struct {
		UserCtx struct {
			Name  string   `json:"name"`
			Roles []string `json:"roles"`
		} `json:"userCtx"`
		Info struct {
			Authenticated string `json:"authenticated"`
		} `json:"info"`
	}
	if code := call(t, nil, http.MethodGet, couchtest.As(base, "test-hashed", pass)+"_session", "", &s); code != http.StatusOK ||
		s.UserCtx.Name != "test-hashed" || strings.Join(s.UserCtx.Roles, ",") != "r1,r2" {
		t.Fatalf("basic auth: HTTP %d %+v", code, s)
	}
	if code := call(t, nil, http.MethodGet, couchtest.As(base, "test-hashed", pass+"x")+"_session", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("a wrong password: HTTP %d, want 401", code)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	plain := couchtest.WithoutAuth(base)
	login, _ := json.Marshal(map[string]string{"name": "test-hashed", "password": pass})
	if code := call(t, c, http.MethodPost, plain+"_session", string(login), nil); code != http.StatusOK {
		t.Fatalf("cookie login: HTTP %d", code)
	}
	if code := call(t, c, http.MethodGet, plain+"_session", "", &s); code != http.StatusOK || s.UserCtx.Name != "test-hashed" || s.Info.Authenticated != "cookie" {
		t.Fatalf("with the cookie: HTTP %d %+v", code, s)
	}
}

// TestServer_Membership: a new database is its admins' only; once its
// _security names members, they read and write, a user who is not one gets
// 403 and an anonymous client 401; design documents stay the admins'.
func TestServer_Membership(t *testing.T) {
	db := couchtest.DB(t)
	member := couchtest.As(db, "test-member", couchtest.NewUser(t, "test-member", "club"))
	stranger := couchtest.As(db, "test-stranger2", couchtest.NewUser(t, "test-stranger2", "other"))
	if code := call(t, nil, http.MethodGet, member, "", nil); code != http.StatusForbidden {
		t.Fatalf("a new database read by a non-admin: HTTP %d, want 403 (admin only)", code)
	}
	sec := `{"admins":{"names":[],"roles":[]},"members":{"names":[],"roles":["club"]}}`
	if code := call(t, nil, http.MethodPut, db+"/_security", sec, nil); code != http.StatusOK {
		t.Fatalf("PUT _security: HTTP %d", code)
	}
	for _, c := range []struct {
		who  string
		u    string
		want int
	}{{"member", member, http.StatusCreated}, {"stranger", stranger, http.StatusForbidden}, {"anonymous", couchtest.WithoutAuth(db), http.StatusUnauthorized}} {
		if code := call(t, nil, http.MethodPut, c.u+"/doc-"+c.who, `{"a":1}`, nil); code != c.want {
			t.Errorf("%s writes: HTTP %d, want %d", c.who, code, c.want)
		}
		read := c.want
		if read == http.StatusCreated {
			read = http.StatusOK
		}
		if code := call(t, nil, http.MethodGet, c.u+"/_all_docs", "", nil); code != read {
			t.Errorf("%s reads: HTTP %d, want %d", c.who, code, read)
		}
	}
	var e struct{ Error, Reason string }
	if code := call(t, nil, http.MethodPut, member+"/_design/x", `{"views":{}}`, &e); code != http.StatusForbidden || e.Reason != "You are not a db or server admin." {
		t.Errorf("a member writes a design document: HTTP %d %+v, want 403", code, e)
	}
}

// TestServer_ValidateArguments: validate_doc_update gets userCtx {db, name,
// roles} and the security object; forbidden is 403 and unauthorized 401,
// and inside _bulk_docs each refused document gets its own error, in the
// order of the request, the others being written.
func TestServer_ValidateArguments(t *testing.T) {
	db := couchtest.DB(t)
	name := "test-validated"
	u := couchtest.As(db, name, couchtest.NewUser(t, name, "club"))
	sec := `{"members":{"roles":["club"]},"admins":{"roles":["_admin"]},"note":"kept"}`
	if code := call(t, nil, http.MethodPut, db+"/_security", sec, nil); code != http.StatusOK {
		t.Fatalf("PUT _security: HTTP %d", code)
	}
	vdu := `function (n, o, u, s) {
	  if (n.say) throw ({forbidden: JSON.stringify({u: u, s: s.note, old: o && o._rev})});
	  if (n.who) throw ({unauthorized: 'who are you?'});
	}`
	ddoc, _ := json.Marshal(map[string]string{"validate_doc_update": vdu})
	if code := call(t, nil, http.MethodPut, db+"/_design/v", string(ddoc), nil); code != http.StatusCreated {
		t.Fatalf("PUT the design document: HTTP %d", code)
	}
	var e struct{ Error, Reason string }
	if code := call(t, nil, http.MethodPut, u+"/d1", `{"say":1}`, &e); code != http.StatusForbidden || e.Error != "forbidden" {
		t.Fatalf("forbidden: HTTP %d %+v, want 403", code, e)
	}
	dbName := db[strings.LastIndex(db, "/")+1:]
	want := `{"u":{"db":"` + dbName + `","name":"` + name + `","roles":["club"]},"s":"kept","old":null}`
	if e.Reason != want {
		t.Fatalf("the function's arguments: %s, want %s", e.Reason, want)
	}
	if code := call(t, nil, http.MethodPut, u+"/d1", `{"who":1}`, &e); code != http.StatusUnauthorized || e.Error != "unauthorized" {
		t.Fatalf("unauthorized: HTTP %d %+v, want 401", code, e)
	}
	var res []struct{ ID, Rev, Error, Reason string }
	body := `{"docs":[{"_id":"b1"},{"_id":"b2","say":1},{"_id":"b3","who":1},{"_id":"b4"}]}`
	if code := call(t, nil, http.MethodPost, u+"/_bulk_docs", body, &res); code != http.StatusCreated || len(res) != 4 {
		t.Fatalf("_bulk_docs: HTTP %d %+v", code, res)
	}
	for i, want := range []string{"", "forbidden", "unauthorized", ""} {
		if res[i].ID != "b"+string(rune('1'+i)) || res[i].Error != want || (want == "") != (res[i].Rev != "") {
			t.Errorf("_bulk_docs result %d: %+v, want id b%d, error %q", i, res[i], i+1, want)
		}
	}
	if code := call(t, nil, http.MethodGet, u+"/b2", "", nil); code != http.StatusNotFound {
		t.Errorf("a refused document was stored: HTTP %d", code)
	}
}
