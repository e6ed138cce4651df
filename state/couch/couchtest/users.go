package couchtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Users of the server other than its admin, as aso's roles have them:
// CouchDB users in the server's _users database (created by the admin when
// missing), each with a random password. They live as long as the server:
// a test makes a user once and every later test of the binary gets the
// same one.

var (
	usersMu sync.Mutex
	users   = map[string]string{} // name -> password
)

// RoleUser returns the name and password of the user whose one role is
// role (e.g. "aso-agent"), creating it on first use. Its name is the
// role's with "test-" in front.
func RoleUser(t testing.TB, role string) (name, pass string) {
	t.Helper()
	name = "test-" + role
	return name, NewUser(t, name, role)
}

// NewUser makes name a user with roles, creating it (or, on a server that
// has it from an earlier run, setting its password and roles) on first
// use, and returns its password. A later call for the same name returns
// the same password without changing the user.
func NewUser(t testing.TB, name string, roles ...string) string {
	t.Helper()
	usersMu.Lock()
	defer usersMu.Unlock()
	if p, ok := users[name]; ok {
		return p
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	pass := hex.EncodeToString(b)
	if err := putUser(Server(t), name, pass, roles); err != nil {
		t.Fatalf("couchtest: create user %s: %v", name, err)
	}
	users[name] = pass
	return pass
}

// As returns u (a server or database URL) with the credentials of user
// name and pass instead of its own.
func As(u, name, pass string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	pu.User = url.UserPassword(name, pass)
	return pu.String()
}

// AsRole returns u with the credentials of role's user (see RoleUser).
func AsRole(t testing.TB, u, role string) string {
	t.Helper()
	name, pass := RoleUser(t, role)
	return As(u, name, pass)
}

// putUser writes the user document of name through the admin's base URL,
// creating _users first if it is missing.
func putUser(base, name, pass string, roles []string) error {
	if err := request(http.MethodPut, base+"_users", http.StatusCreated); err != nil && !strings.Contains(err.Error(), "HTTP 412") {
		return err
	}
	id := base + "_users/" + url.PathEscape("org.couchdb.user:"+name)
	doc := map[string]any{"_id": "org.couchdb.user:" + name, "name": name, "type": "user", "roles": roles, "password": pass}
	var old struct {
		Rev string `json:"_rev"`
	}
	if status, body, err := send(http.MethodGet, id, nil); err != nil {
		return err
	} else if status == http.StatusOK && json.Unmarshal(body, &old) == nil {
		doc["_rev"] = old.Rev
	}
	b, _ := json.Marshal(doc)
	status, body, err := send(http.MethodPut, id, b)
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusAccepted {
		return fmt.Errorf("PUT %s: HTTP %d: %s", name, status, body)
	}
	return waitLogin(base, name, pass, loginWait)
}

// loginWait bounds how long waitLogin waits for a new password to work.
const loginWait = 30 * time.Second

// waitLogin returns once name logs in with pass (GET _session with basic
// auth names the user), or fails after wait. CouchDB caches credentials
// (chttpd_auth_cache): right after a user document is written, and on a
// cluster until every node has it, the old password may still be accepted
// and the new one refused with 401 "Name or password is incorrect".
func waitLogin(base, name, pass string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		status, body, err := send(http.MethodGet, As(base, name, pass)+"_session", nil)
		var s struct {
			UserCtx struct {
				Name string `json:"name"`
			} `json:"userCtx"`
		}
		if err == nil && status == http.StatusOK && json.Unmarshal(body, &s) == nil && s.UserCtx.Name == name {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("user %s does not log in with its new password %s after it was written (HTTP %d %s, %v)", name, wait, status, body, err)
		}
		time.Sleep(delay)
	}
}

// send makes a request with the user information of u as basic auth.
func send(method, u string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if pu, err := url.Parse(u); err == nil && pu.User != nil {
		p, _ := pu.User.Password()
		req.SetBasicAuth(pu.User.Username(), p)
		pu.User = nil
		req.URL = pu
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out, nil
}
