package cmd_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads, which tells a reader when more was written.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed at the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	text, _ := s.written()
	return text
}

// written returns what was written so far and a channel closed at the
// next write.
func (s *syncBuffer) written() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{})
	}
	return s.b.String(), s.wrote
}

// startFTSSim runs `aso fts-sim args...` in the background and returns the
// URL it prints, and a function that interrupts it and returns its exit
// code.
func startFTSSim(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx, append([]string{"fts-sim", "--listen", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	stop := func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("fts-sim did not stop when interrupted")
			return -1
		}
	}
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for waiting := true; waiting; {
		out, more := stdout.written()
		if line, ok := strings.CutPrefix(out, "fts-sim: serving "); ok && strings.HasSuffix(line, "\n") {
			t.Cleanup(func() { cancel() })
			return strings.TrimSpace(line), stop
		}
		select {
		case <-more:
		case code := <-done:
			t.Fatalf("fts-sim exited %d: %s", code, stderr.String())
		case <-deadline.C:
			waiting = false
		}
	}
	cancel()
	t.Fatalf("fts-sim printed no URL; stdout %q stderr %q", stdout.String(), stderr.String())
	return "", nil
}

func getJSON(t *testing.T, c *http.Client, url string, token string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return v
}

func TestFTSSim_PlainHTTP(t *testing.T) {
	url, stop := startFTSSim(t, "--seed", "7", "--oauth2")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %q", url)
	}
	w := getJSON(t, http.DefaultClient, url+"/whoami", "some-token")
	if w["method"] != "oauth2" {
		t.Fatalf("whoami method %v, want oauth2", w["method"])
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d after interrupt, want 0", code)
	}
	if _, err := http.Get(url + "/"); err == nil {
		t.Fatal("the simulator still serves after the interrupt")
	}
}

// postJob submits the JSON body to the simulator at url with a bearer token.
func postJob(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/jobs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestFTSSim_CheckDuplicates: --check-duplicates refuses a second active
// file to one destination with FTS's 409; without it both are stored.
func TestFTSSim_CheckDuplicates(t *testing.T) {
	job := `{"files":[{"sources":["gsiftp://a.example.org/f"],"destinations":["gsiftp://b.example.org/f"]}]}`
	submit := func(url string) int {
		resp := postJob(t, url, job)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		args   []string
		second int
	}{{[]string{"--check-duplicates"}, 409}, {nil, 200}} {
		url, _ := startFTSSim(t, append([]string{"--oauth2", "--queue-delay", "1h"}, c.args...)...)
		if got := submit(url); got != 200 {
			t.Fatalf("%v: first submission %d", c.args, got)
		}
		if got := submit(url); got != c.second {
			t.Errorf("%v: second submission to the same destination %d, want %d", c.args, got, c.second)
		}
	}
}

func TestFTSSim_TLSDir(t *testing.T) {
	p := ftstest.NewPKI(t)
	dir := t.TempDir()
	var chain []byte
	for _, der := range p.Server.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(p.Server.PrivateKey.(*rsa.PrivateKey))})
	ca, err := os.ReadDir(p.CADir)
	if err != nil || len(ca) == 0 {
		t.Fatalf("CA dir: %v", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(p.CADir, ca[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"hostcert.pem": chain, "hostkey.pem": key, "0badc0de.0": caPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	url, stop := startFTSSim(t, "--tls-dir", dir)
	defer stop()
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("URL %q", url)
	}
	proxy, err := tls.X509KeyPair(p.ProxyPEM, p.ProxyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: p.CAPool, Certificates: []tls.Certificate{proxy}, MinVersion: tls.VersionTLS12,
	}}}
	w := getJSON(t, c, url+"/whoami", "")
	if w["method"] != "certificate" || w["user_dn"] != p.UserDN {
		t.Fatalf("whoami %v, want the proxy's user %s by certificate", w, p.UserDN)
	}
}

func TestFTSSim_BadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"fts-sim", "--failure-rate", "1.5"},
		{"fts-sim", "--speed", "0"},
		{"fts-sim", "--tls-dir", t.TempDir()},
		{"fts-sim"}, // plain HTTP without --oauth2 could authenticate nobody
		{"fts-sim", "--oauth2", "--failure-reasons", filepath.Join(t.TempDir(), "missing")},
		{"fts-sim", "--oauth2", "--failure-reasons", writeTemp(t, "# nothing but a comment\n")},
		{"fts-sim", "--oauth2", "--failure-reasons", writeTemp(t, "SOURCE [2] fine\nTRANSFER [5] \xff\n")},
	} {
		var stdout, stderr bytes.Buffer
		if code := cmd.ExecuteContext(context.Background(), args, &stdout, &stderr); code != cmd.ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, cmd.ExitUsage, stderr.String())
		}
	}
}

// TestFTSSim_BinaryDoesNotLinkTesting proves that the shipped binary, which
// serves the simulator, does not link the testing package (nor ftstest,
// the simulator's test face).
func TestFTSSim_BinaryDoesNotLinkTesting(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to list the binary's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/asyncstageout/aso").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/asyncstageout/aso/fts/ftssim") {
		t.Fatalf("the binary does not link fts/ftssim; the dependency list is wrong: %v", deps)
	}
	for _, forbidden := range []string{"testing", "github.com/asyncstageout/aso/fts/ftstest"} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("the aso binary links %s", forbidden)
		}
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reasons.txt")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFTSSim_FailureReasonsFile: failed attempts draw their reasons from
// --failure-reasons, and a token needs --oauth2.
func TestFTSSim_FailureReasonsFile(t *testing.T) {
	reasons := writeTemp(t, "# real davs text\nSOURCE [2] Result HTTP 404 : File not found  after 1 attempts\n")
	url, stop := startFTSSim(t, "--oauth2", "--failure-rate", "1", "--failure-reasons", reasons,
		"--queue-delay", "0", "--start-delay", "0", "--transfer-time", "0")
	defer stop()
	body := `{"files":[{"sources":["davs://a.example.org/f"],"destinations":["davs://b.example.org/f"]}],"params":{"retry":2}}`
	resp := postJob(t, url, body)
	var sub struct {
		JobID string `json:"job_id"`
	}
	err := json.NewDecoder(resp.Body).Decode(&sub)
	resp.Body.Close()
	if err != nil || sub.JobID == "" {
		t.Fatalf("submit: %d %v", resp.StatusCode, err)
	}
	j := getJSON(t, http.DefaultClient, url+"/jobs/"+sub.JobID+"?files=file_state,reason,retry", "t")
	files, _ := j["files"].([]any)
	if len(files) != 1 {
		t.Fatalf("job %v", j)
	}
	f := files[0].(map[string]any)
	if f["file_state"] != "FAILED" || f["reason"] != "SOURCE [2] Result HTTP 404 : File not found  after 1 attempts" || f["retry"] != 0.0 {
		t.Errorf("file %v: want FAILED at once (SOURCE ENOENT is not recoverable) with the file's reason", f)
	}
}

// TestRun_LocalSimulatorRefusesRemoteURLs: the in-process simulator (aso run
// without --fts) copies file:// URLs only. A davs:// transfer is refused at
// submission (400), so nothing is recorded done that was not copied, and it
// says why; as FTS accepted no job of the run, the refusal may be the
// configuration's, so the transfer waits for its next attempt rather than
// failing (the last attempt fails it: --max-attempts 1 here). The log says
// which FTS the run used.
func TestRun_LocalSimulatorRefusesRemoteURLs(t *testing.T) {
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("gfal-rm not found: %s", srm.GfalRmInstallHint())
	}
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	body := "T2_XX_A:\n  protocol: davs\n  rules:\n    - path-match: /store/(.*)\n      result: davs://se-a.example.org:2880/store/$1\n" +
		"T1_XX_B:\n  protocol: davs\n  rules:\n    - path-match: /store/(.*)\n      result: davs://se-b.example.org:2880/store/$1\n"
	if err := os.WriteFile(sites, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	requests := filepath.Join(dir, "requests.jsonl")
	req := `{"user": "bob", "source": "T2_XX_A", "destination": "T1_XX_B", "source_lfn": "/store/temp/user/bob/f1", "destination_lfn": "/store/user/bob/f1", "size": 10, "checksums": {"adler32": "0a1b2c3d"}}`
	if err := os.WriteFile(requests, []byte(req+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := newState(t)
	aso(t, "enqueue", st, "-f", requests).wantCode(t, 0)
	// davs:// sites need a CA directory for gfal-rm: one with a CA file
	ca := t.TempDir()
	if err := os.WriteFile(filepath.Join(ca, "ca.pem"), []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := aso(t, "run", st, "--user", "bob", "--sites", sites, "--cert-dir", ca, "--interval", "20ms", "--progress", "never", "--max-attempts", "1")
	r.wantCode(t, 0)
	wantQueue(t, map[state.State]int{state.StateDone: 0, state.StateFailed: 1}, st, "--user", "bob")
	if !strings.Contains(r.stderr, "FTS: in-process simulator (file:// only)") {
		t.Errorf("the log does not say which FTS the run used:\n%s", r.stderr)
	}
	js := aso(t, "status", st, "--user", "bob", "--json").wantCode(t, 0)
	wantMatch(t, js.stdout, `copies only file:// URLs`, `"state": "failed"`, `"unsupported": 1`)
}
