package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

	"github.com/asyncstageout/aso/state"
)

// couchServer is the CouchDB server of the benchmark: the Node test server
// started here, or the real CouchDB of ASO_TEST_COUCHDB_URL.
type couchServer struct {
	base string // ends in "/", may hold credentials
	name string
	cmd  *exec.Cmd
	hc   *http.Client
}

func startCouch(ctx context.Context) (*couchServer, error) {
	hc := &http.Client{Timeout: 5 * time.Minute}
	if u := os.Getenv("ASO_TEST_COUCHDB_URL"); u != "" {
		return &couchServer{base: strings.TrimRight(u, "/") + "/", name: "CouchDB at " + redact(u), hc: hc}, nil
	}
	dir := filepath.Join("state", "couch", "testserver")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express-pouchdb")); err != nil {
		return nil, fmt.Errorf("the CouchDB test server is not installed: run `cd %s && npm ci --ignore-scripts` (or set ASO_TEST_COUCHDB_URL, or -backends memfile)", dir)
	}
	// 100,000 transfers take the in-memory server to about 2.5 GB; the
	// default heap limit of node is smaller on a machine with less than
	// about 16 GB of memory
	cmd := exec.Command("node", "--max-old-space-size=6144", "server.js")
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

func (s *couchServer) dbURL(db string) string { return s.base + db }

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

func (s *couchServer) dropDB(db string) {
	_, _ = s.do(context.Background(), http.MethodDelete, db, nil)
}

// do sends one request and returns the body of a 2xx answer.
func (s *couchServer) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	u, err := url.Parse(s.base + path)
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

// reference writes, to a fresh database set up like the agent's, the n
// transfers and then the four revisions of each one's life (claim,
// submit_sid, commit, terminal: the revisions the agent writes when every
// transfer finishes at the first status query), as _bulk_docs batches of
// batch documents. It returns the time spent in the revision requests.
func (s *couchServer) reference(ctx context.Context, aso string, n, batch int) (float64, error) {
	db, err := s.newDB(ctx, aso)
	if err != nil {
		return 0, err
	}
	defer s.dropDB(db)
	now := time.Now()
	ts := referenceTransfers(n, now)
	steps := append([]func(t *state.Transfer) error{nil}, lifeSteps(now)...) // insert: not timed, like aso enqueue
	var timed time.Duration
	for si, step := range steps {
		for lo := 0; lo < n; lo += batch {
			part := ts[lo:min(n, lo+batch)]
			docs := make([]state.Transfer, len(part))
			for i := range part {
				if step != nil {
					if err := step(&part[i]); err != nil {
						return 0, fmt.Errorf("revision %d of %s: %w", si, part[i].ID, err)
					}
				}
				part[i].Type = state.DocType
				docs[i] = part[i]
			}
			body, err := json.Marshal(map[string]any{"docs": docs})
			if err != nil {
				return 0, err
			}
			t0 := time.Now()
			rb, err := s.do(ctx, http.MethodPost, db+"/_bulk_docs", body)
			if si > 0 {
				timed += time.Since(t0)
			}
			if err != nil {
				return 0, err
			}
			var res []struct{ ID, Rev, Error, Reason string }
			if err := json.Unmarshal(rb, &res); err != nil {
				return 0, err
			}
			for i, r := range res {
				if r.Error != "" {
					return 0, fmt.Errorf("revision %d of %s: %s: %s", si, r.ID, r.Error, r.Reason)
				}
				part[i].Rev = r.Rev
			}
		}
	}
	return timed.Seconds(), nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}
