package couchtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Users of the server other than its admin, as aso's roles have them:
// CouchDB users in the server's _users database (created by the admin when
// missing). They live as long as the server: a test makes a user once and
// every later test of the binary gets the same one.
//
// A user's password is derived from the admin's password and the user's
// name and roles, not drawn at random: go test runs the test binaries of
// several packages at once, and against one real server they share its
// _users. With a random password per binary, a binary that set its
// password for a name (test-aso-producer, used by more than one package)
// had its users refused with 401 "Name or password is incorrect" once
// another binary set its own. Derived, every binary sets the same password,
// and a user that already logs in with it is not written again.

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
// has it with another password or other roles, setting them) on first
// use, and returns its password. A later call for the same name returns
// the same password without changing the user.
func NewUser(t testing.TB, name string, roles ...string) string {
	t.Helper()
	usersMu.Lock()
	defer usersMu.Unlock()
	if p, ok := users[name]; ok {
		return p
	}
	base := Server(t)
	pass := password(base, name, roles)
	if err := putUser(base, name, pass, roles); err != nil {
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

// password returns the password of user name with roles on the server of
// the admin's base URL: the same in every test binary that uses the server.
func password(base, name string, roles []string) string {
	_, admin := Auth(base)
	m := hmac.New(sha256.New, []byte(admin))
	m.Write([]byte(name + "\x00" + strings.Join(roles, ",")))
	return hex.EncodeToString(m.Sum(nil)[:12])
}

// putUser makes name a user with pass and roles through the admin's base
// URL, creating _users first if it is missing, unless it already logs in
// with pass and has those roles (made by an earlier run, or by another test
// binary at the same time).
func putUser(base, name, pass string, roles []string) error {
	if has, err := loginAs(base, name, pass); err == nil && slices.Equal(has, sorted(roles)) {
		return nil
	}
	if err := request(http.MethodPut, base+"_users", http.StatusCreated); err != nil && !strings.Contains(err.Error(), "HTTP 412") {
		return err
	}
	id := base + "_users/" + url.PathEscape("org.couchdb.user:"+name)
	for tries := 1; ; tries++ {
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
		if status == http.StatusConflict && tries < 5 {
			continue // another binary wrote it between the read and the write
		}
		if status != http.StatusCreated && status != http.StatusAccepted {
			return fmt.Errorf("PUT %s: HTTP %d: %s", name, status, body)
		}
		return waitLogin(base, name, pass, loginWait)
	}
}

// loginAs returns the roles name has when it logs in with pass (GET
// _session with basic auth), sorted, or an error if it does not.
func loginAs(base, name, pass string) ([]string, error) {
	status, body, err := send(http.MethodGet, As(base, name, pass)+"_session", nil)
	if err != nil {
		return nil, err
	}
	var s struct {
		UserCtx struct {
			Name  string   `json:"name"`
			Roles []string `json:"roles"`
		} `json:"userCtx"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &s) != nil || s.UserCtx.Name != name {
		return nil, fmt.Errorf("HTTP %d %s", status, body)
	}
	return sorted(s.UserCtx.Roles), nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
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
		_, err := loginAs(base, name, pass)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("user %s does not log in with its new password %s after it was written: %v", name, wait, err)
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
