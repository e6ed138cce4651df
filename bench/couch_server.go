package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// couchServer is the CouchDB server of the benchmark: the Node test server
// started here, or the real CouchDB of ASO_TEST_COUCHDB_URL, a single node
// or the nodes of a cluster separated by commas.
type couchServer struct {
	base  string   // the first node; ends in "/", may hold credentials
	nodes []string // every node, base first
	name  string
	cmd   *exec.Cmd
	hc    *http.Client
}

// startCouch starts the test server with a heap of heapMB, or names the
// real CouchDB of ASO_TEST_COUCHDB_URL.
func startCouch(ctx context.Context, heapMB int) (*couchServer, error) {
	hc := &http.Client{Timeout: 5 * time.Minute}
	if u := os.Getenv("ASO_TEST_COUCHDB_URL"); u != "" {
		s := &couchServer{hc: hc}
		for _, n := range strings.Split(u, ",") {
			s.nodes = append(s.nodes, strings.TrimRight(strings.TrimSpace(n), "/")+"/")
		}
		s.base = s.nodes[0]
		s.name = "CouchDB at " + redact(s.base)
		if len(s.nodes) > 1 {
			s.name = fmt.Sprintf("CouchDB cluster at %s and %d more nodes", redact(s.base), len(s.nodes)-1)
		}
		return s, nil
	}
	dir := filepath.Join("state", "couch", "testserver")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express-pouchdb")); err != nil {
		return nil, fmt.Errorf("the CouchDB test server is not installed: run `cd %s && npm ci --ignore-scripts` (or set ASO_TEST_COUCHDB_URL, or -backends memfile)", dir)
	}
	// 100,000 transfers take the in-memory server to about 2.5 GB; the
	// default heap limit of node is smaller on a machine with less than
	// about 16 GB of memory
	cmd := exec.Command("node", fmt.Sprintf("--max-old-space-size=%d", heapMB), "server.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT=0", "LOG="+os.DevNull)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the CouchDB test server: %w", err)
	}
	s := &couchServer{cmd: cmd, name: "PouchDB test server (in memory)", hc: hc}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				found <- u
			}
		}
	}()
	select {
	case s.base = <-found:
		s.nodes = []string{s.base}
		return s, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	s.stop()
	return nil, fmt.Errorf("the CouchDB test server did not start within 30 s")
}

func (s *couchServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

// dbURL is the --state of database db: every node's URL of it, separated
// by commas (aso fails over between them).
func (s *couchServer) dbURL(db string) string {
	urls := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		urls[i] = n + db
	}
	return strings.Join(urls, ",")
}

// newDB creates a fresh database set up by `aso init`.
func (s *couchServer) newDB(ctx context.Context, aso string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "aso_bench_" + hex.EncodeToString(b[:])
	if out, err := asoCommand(ctx, aso, s.dbURL(db), "init", "--log-level", "warn").CombinedOutput(); err != nil {
		return "", fmt.Errorf("aso init: %v: %s", err, tail(out))
	}
	return db, nil
}

// freshDB creates a fresh database set up by `aso init`; drop drops it,
// unless keep.
func (s *couchServer) freshDB(ctx context.Context, aso string, keep bool) (db string, drop func(), err error) {
	if db, err = s.newDB(ctx, aso); err != nil {
		return "", nil, err
	}
	return db, func() {
		if !keep {
			s.dropDB(db)
		}
	}, nil
}

func (s *couchServer) dropDB(db string) {
	_, _ = s.do(context.Background(), http.MethodDelete, db, nil)
}

// do sends one request to the first node and returns the body of a 2xx
// answer.
func (s *couchServer) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	return s.doAt(ctx, 0, method, path, body)
}

// doAt is do on node i (modulo the number of nodes).
func (s *couchServer) doAt(ctx context.Context, i int, method, path string, body []byte) ([]byte, error) {
	u, err := url.Parse(s.nodes[i%len(s.nodes)] + path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		p, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), p)
		u.User = nil
		req.URL = u
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: HTTP %d: %.300s", method, redact(req.URL.String()), resp.StatusCode, rb)
	}
	return rb, nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}
