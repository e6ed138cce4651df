// Package couchtest gives tests a CouchDB-compatible server and a fresh
// database per test. By default it starts the Node test server of
// state/couch/testserver (express-pouchdb on in-memory PouchDB) once per
// test binary, installing its npm dependencies first if they are missing;
// with ASO_TEST_COUCHDB_URL set (e.g. http://admin:secret@127.0.0.1:5984/)
// it uses that server instead, a real Apache CouchDB 3.x.
//
// Like a real CouchDB 3, the test server requires authentication: it is
// started with a server admin (user AdminUser, a random password), and the
// URLs Server and DB return carry those credentials, so tests that pass
// them on authenticate without knowing them. A request without them gets
// 401, as from a real server. RoleUser and NewUser make other users (of
// aso's roles, or any), and As and AsRole give a URL their credentials.
// NewCluster puts a proxy in front of a database that answers as two
// coordinators of a CouchDB cluster would.
//
// Use it from TestMain so the server is stopped at the end:
//
//	func TestMain(m *testing.M) { os.Exit(couchtest.Main(m)) }
//
// It is for tests only and must not be imported by production code.
package couchtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvURL names the environment variable with the URL of a real CouchDB
// server to test against instead of the Node test server.
const EnvURL = "ASO_TEST_COUCHDB_URL"

// AdminUser is the server admin of the Node test server.
const AdminUser = "admin"

// Real reports whether the tests run against a real CouchDB server
// (EnvURL is set). Tests of features the Node test server lacks run only
// then, and skip with the reason otherwise.
func Real() bool { return os.Getenv(EnvURL) != "" }

var (
	once    sync.Once
	baseURL string
	srvErr  error
	srv     *server
)

// Server returns the base URL of the server, ending in "/", starting the
// Node test server on first use.
func Server(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			baseURL = strings.TrimRight(u, "/") + "/"
			return
		}
		srv, srvErr = start()
		if srvErr == nil {
			baseURL = srv.url
		}
	})
	if srvErr != nil {
		t.Fatalf("couchtest: %v", srvErr)
	}
	return baseURL
}

// WithoutAuth returns u without its user information: the URL of the same
// server or database as an unauthenticated client sees it.
func WithoutAuth(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil {
		return u
	}
	pu.User = nil
	return pu.String()
}

// Auth returns the user and password carried by u ("" if none).
func Auth(u string) (user, pass string) {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil {
		return "", ""
	}
	p, _ := pu.User.Password()
	return pu.User.Username(), p
}

// Main runs the tests and stops the server started for them.
func Main(m *testing.M) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	return code
}

// DB creates a database with a unique name and returns its URL; it is
// deleted when the test ends.
func DB(t testing.TB) string {
	t.Helper()
	base := Server(t)
	name := NewName()
	u := base + name
	if err := request(http.MethodPut, u, http.StatusCreated); err != nil {
		t.Fatalf("couchtest: create database: %v", err)
	}
	DropLater(t, u)
	return u
}

// DropLater deletes the database at u (if it exists) when the test ends.
func DropLater(t testing.TB, u string) {
	t.Cleanup(func() {
		if err := request(http.MethodDelete, u, http.StatusOK); err != nil && !strings.Contains(err.Error(), "HTTP 404") {
			t.Errorf("couchtest: delete database: %v", err)
		}
	})
}

// NewName returns a database name that no other test uses.
func NewName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "aso_test_" + hex.EncodeToString(b)
}

// request sends a body-less request and checks its status.
func request(method, u string, want int) error {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return err
	}
	if method == http.MethodDelete {
		// a DELETE again finds nothing to delete (404, which DropLater
		// accepts): the transport may send it again on a fresh connection
		// when the server closed the idle one it went out on (Node's
		// keep-alive timeout), rather than fail with "connection reset"
		req.Header["Idempotency-Key"] = nil
	}
	if pu, err := url.Parse(u); err == nil && pu.User != nil {
		p, _ := pu.User.Password()
		req.SetBasicAuth(pu.User.Username(), p)
		pu.User = nil
		req.URL = pu
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != want && !(want == http.StatusCreated && resp.StatusCode == http.StatusAccepted) {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, req.URL.Redacted(), resp.StatusCode, body)
	}
	return nil
}

// Dir returns the directory of the Node test server.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testserver")
}

type server struct {
	cmd    *exec.Cmd
	url    string
	logDir string
	done   chan struct{}
}

func start() (*server, error) {
	dir := Dir()
	if _, err := exec.LookPath("node"); err != nil {
		return nil, errors.New("node is not installed: install Node.js 20 and npm (apt-get install nodejs npm), or set " + EnvURL + " to a CouchDB server")
	}
	if err := install(dir); err != nil {
		return nil, err
	}
	logDir, err := os.MkdirTemp("", "aso-couchtest-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", "server.js")
	cmd.Dir = dir
	pass := make([]byte, 12)
	_, _ = rand.Read(pass)
	// a user's password is hashed as CouchDB hashes it, with fewer
	// iterations (CouchDB's [chttpd_auth] iterations), so that making the
	// tests' users does not take the CPU the process tests' agents need
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT=0", "LOG="+filepath.Join(logDir, "server.log"),
		"ADMIN_USER="+AdminUser, "ADMIN_PASS="+hex.EncodeToString(pass), "PBKDF2_ITERATIONS=1000")
	cmd.SysProcAttr = sysProcAttr()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the test server: %w", err)
	}
	s := &server{cmd: cmd, logDir: logDir, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				lines <- u
			}
		}
		close(s.done)
	}()
	select {
	case u := <-lines:
		s.url = strings.Replace(u, "http://", "http://"+AdminUser+":"+hex.EncodeToString(pass)+"@", 1)
	case <-s.done:
		_ = cmd.Wait()
		return nil, fmt.Errorf("the test server exited before listening: %s", stderr.String())
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("the test server did not listen within 30 s: %s", stderr.String())
	}
	if err := checkUp(s.url); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// checkUp checks that the server, which printed LISTENING once it listens
// with its daemons started, answers: one request, bounded by the client's
// timeout.
func checkUp(base string) error {
	if err := request(http.MethodGet, base+"_up", http.StatusOK); err != nil {
		return fmt.Errorf("the test server at %s does not answer: %w", base, err)
	}
	return nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
	}
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.logDir)
}

// install runs `npm ci --ignore-scripts` in dir if node_modules is missing,
// under a file lock so that test binaries running in parallel install once.
func install(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express-pouchdb")); err == nil {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "aso-couchtest-npm.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express-pouchdb")); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing the test server's dependencies failed; run `cd %s && npm ci --ignore-scripts` by hand: %v\n%s", dir, err, out)
	}
	return nil
}

// lockedBuffer collects the server's stderr for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
