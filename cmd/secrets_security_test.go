package cmd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// childEnv marks the test binary re-executed as the aso process of the
// secrets tests, so that everything the process writes is captured.
const childEnv = "ASO_TEST_SECRETS_CHILD"

// TestSecretsChildProcess is aso itself when childEnv is set: the secrets
// tests run it as a separate process.
func TestSecretsChildProcess(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the aso process of TestSecrets_NeverShown; not a test on its own")
	}
	args := os.Args[slices.Index(os.Args, "--")+1:]
	os.Exit(cmd.ExecuteContext(context.Background(), args, os.Stdout, os.Stderr))
}

func secret(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// secretsWorld is everything the secrets test runs aso against.
type secretsWorld struct {
	t        *testing.T
	dir      string
	env      []string          // the aso process's environment
	secrets  map[string]string // name -> value that must never be shown
	output   bytes.Buffer      // every byte every aso process wrote
	argvFile string            // the gfal-rm wrapper appends its argv here
	envFile  string            // and its environment here
	proxy    string
}

// authProxy stands in front of the CouchDB test server and lets through
// only requests with HTTP basic auth user and one of passwords, as a CouchDB
// with an admin would.
func authProxy(t *testing.T, target, user string, passwords ...string) string {
	t.Helper()
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: tu.Scheme, Host: tu.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || !slices.Contains(passwords, p) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, `{"error":"unauthorized","reason":"Name or password is incorrect."}`)
			return
		}
		r.Header.Del("Authorization")
		if tu.User != nil { // the server's own credentials
			p, _ := tu.User.Password()
			r.SetBasicAuth(tu.User.Username(), p)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// aso runs aso as a process with the world's environment plus extra, and
// records its output.
func (sw *secretsWorld) aso(extra []string, stdin string, args ...string) (int, string) {
	sw.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestSecretsChildProcess$", "--"}, args...)...)
	c.Env = append(append([]string{childEnv + "=1"}, sw.env...), extra...)
	c.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	if d := time.Since(start); d > 3*time.Second {
		sw.t.Logf("aso %s took %s", args[0], d.Round(100*time.Millisecond))
	}
	code := c.ProcessState.ExitCode()
	if err != nil && code < 0 {
		sw.t.Fatalf("aso %q: %v", args, err)
	}
	// (the command line is not recorded: one case puts a password there on purpose)
	sw.output.Write(out.Bytes())
	return code, out.String()
}

// TestSecrets_NeverShown runs aso init, enqueue, status, kill, run, retry
// and rm as processes at debug level with JSON logs, with a CouchDB
// password in the state URL and in ASO_COUCHDB_PASSWORD, a bearer token
// file and a proxy file, on the good paths and on the failure paths (wrong
// password, unreachable CouchDB, FTS refusing the token, unreachable FTS).
// No password, token or proxy content appears in anything aso printed, and
// gfal-rm, the only program aso starts, got no secret in its argv or
// environment: the proxy only by its path in X509_USER_PROXY. Token and
// proxy files that others can read are refused.
func TestSecrets_NeverShown(t *testing.T) {
	requireGfalRmForCmd(t)
	dir := t.TempDir()
	sw := &secretsWorld{t: t, dir: dir, secrets: map[string]string{
		"URL password": secret("urlpw"), "env password": secret("envpw"), "wrong password": secret("wrongpw"),
		"token": secret("tok"), "other token": secret("othertok"), "proxy key": secret("proxykey"),
	}}
	sw.argvFile, sw.envFile = filepath.Join(dir, "gfal-argv"), filepath.Join(dir, "gfal-env")
	bin := filepath.Join(dir, "bin")
	noErr(t, os.Mkdir(bin, 0o755))
	gfal, err := exec.LookPath("gfal-rm")
	noErr(t, err)
	// gfal-rm on aso's PATH records each run's argv and environment, then
	// runs the real one
	noErr(t, os.WriteFile(filepath.Join(bin, "gfal-rm"), []byte("#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\" >> '"+sw.argvFile+
		"'\nprintf '\\n' >> '"+sw.argvFile+"'\ncat /proc/$$/environ >> '"+sw.envFile+"'\nprintf '\\n' >> '"+sw.envFile+"'\nexec '"+gfal+"' \"$@\"\n"), 0o755))
	sw.proxy = filepath.Join(dir, "x509up_u1000")
	noErr(t, os.WriteFile(sw.proxy, []byte("-----BEGIN RSA PRIVATE KEY-----\n"+sw.secrets["proxy key"]+"\n-----END RSA PRIVATE KEY-----\n"), 0o600))
	tokenFile, otherTokenFile := filepath.Join(dir, "token"), filepath.Join(dir, "other-token")
	noErr(t, os.WriteFile(tokenFile, []byte(sw.secrets["token"]+"\n"), 0o600))
	noErr(t, os.WriteFile(otherTokenFile, []byte(sw.secrets["other token"]+"\n"), 0o600))

	// CouchDB behind a password; FTS accepting one token
	dbURL := couchtest.DB(t)
	base := authProxy(t, dbURL, "asoadmin", sw.secrets["URL password"], sw.secrets["env password"])
	dbName := dbURL[strings.LastIndex(dbURL, "/")+1:]
	hostPort := strings.TrimPrefix(base, "http://")
	withPassword := func(pw string) string { return "http://asoadmin:" + pw + "@" + hostPort + "/" + dbName }
	sim := ftstest.NewServer(t, ftstest.Options{LocalFiles: true, Tokens: []string{sw.secrets["token"]}})

	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	sites := filepath.Join(dir, "sites.yaml")
	noErr(t, os.WriteFile(sites, []byte(fmt.Sprintf("T2_XX_Src:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"T1_XX_Dst:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n", src, dst)), 0o644))
	var requests strings.Builder
	for i := 0; i < 4; i++ {
		if i < 3 { // the last one's source is missing: it fails, and nothing of it is deleted
			p := filepath.Join(src, "store", "user", "sam", fmt.Sprintf("f%d.root", i))
			noErr(t, os.MkdirAll(filepath.Dir(p), 0o755))
			noErr(t, os.WriteFile(p, []byte("data"), 0o644))
		}
		fmt.Fprintf(&requests, `{"source": "T2_XX_Src", "destination": "T1_XX_Dst", "source_lfn": "/store/user/sam/f%d.root", "destination_lfn": "/store/user/sam/f%d.root", "size": 4}`+"\n", i, i)
	}
	requests.WriteString(`{"source": "T2_XX_Src", "colour": "red"}` + "\n")
	killID := state.TransferID("sam", "T2_XX_Src", "/store/user/sam/f9.root", "T1_XX_Dst", "/store/user/sam/f9.root")
	fmt.Fprintf(&requests, `{"size": 1, "source": "T2_XX_Src", "destination": "T1_XX_Dst", "source_lfn": "/store/user/sam/f9.root", "destination_lfn": "/store/user/sam/f9.root"}`+"\n")

	sw.env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir, "ASO_USER=sam", "ASO_LOG_LEVEL=debug", "ASO_LOG_FORMAT=json", "ASO_SITES=" + sites}
	urlState := []string{"ASO_STATE=" + withPassword(sw.secrets["URL password"])}
	envState := []string{"ASO_STATE=http://" + hostPort + "/" + dbName, "ASO_COUCHDB_USER=asoadmin", "ASO_COUCHDB_PASSWORD=" + sw.secrets["env password"]}
	// --insecure: the simulator speaks plain HTTP, there is no certificate to verify
	runFlags := []string{"run", "--fts", sim.URL, "--insecure", "--token-file", tokenFile, "--proxy", sw.proxy, "--interval", "100ms", "--max-runtime", "90s", "--progress", "never"}

	// the good paths
	sw.want(0, urlState, "", "init")
	sw.want(cmd.ExitUsage, urlState, requests.String(), "enqueue", "-v")
	sw.want(0, urlState, "", "kill", killID)
	sw.want(0, urlState, "", "status")
	sw.want(0, envState, "", "status", "--json", "--all-users")
	sw.want(0, envState, "", "status", killID)
	sw.want(0, urlState, "", runFlags...)
	sw.want(0, envState, "", "retry", "--failed")
	sw.want(0, envState, "", runFlags...)
	// a file no transfer names: rm reads the store, then runs gfal-rm
	stray := filepath.Join(dst, "store/user/sam/stray.root")
	noErr(t, os.WriteFile(stray, []byte("x"), 0o644))
	sw.want(0, urlState, "", "rm", "--proxy", sw.proxy, "file://"+stray)
	_, out := sw.aso(urlState, "", "status", "--json")
	if !strings.Contains(out, `"failed": 1`) && !strings.Contains(out, `"failed":1`) {
		t.Errorf("after the runs, want the transfer with no source failed:\n%s", out)
	}

	// the failure paths
	wrongURL := []string{"ASO_STATE=" + withPassword(sw.secrets["wrong password"])}
	wrongEnv := []string{envState[0], envState[1], "ASO_COUCHDB_PASSWORD=" + sw.secrets["wrong password"]}
	down := []string{"ASO_STATE=http://asoadmin:" + sw.secrets["URL password"] + "@" + closedPort(t) + "/" + dbName, "ASO_COUCHDB_TIMEOUT=2s"}
	// credentials the server refuses need a person (78)
	for _, env := range [][]string{wrongURL, wrongEnv} {
		sw.want(cmd.ExitConfig, env, "", "status")
		sw.want(cmd.ExitConfig, env, requests.String(), "enqueue")
		sw.want(cmd.ExitConfig, env, "", runFlags...)
	}
	// a store that does not answer is temporary (75): run again later
	sw.want(cmd.ExitTempFail, down, "", "status")
	sw.want(cmd.ExitTempFail, down, requests.String(), "enqueue")
	sw.want(cmd.ExitTempFail, down, "", runFlags...)
	sw.want(cmd.ExitConfig, wrongURL, "", "init")
	sw.want(cmd.ExitTempFail, down, "", "kill", killID)
	sw.want(0, envState, "", "retry", "--failed") // work for the runs against a bad FTS
	// FTS refusing the token, then not answering: the transfer is aborted
	// each time (-1: any exit code), and is claimable again at once
	badFTS := []string{"--once", "--cool-off", "1ms", "--phase-timeout", "2s", "--fts-timeout", "1s", "--insecure", "--progress", "never"}
	sw.want(-1, urlState, "", append([]string{"run", "--fts", sim.URL, "--token-file", otherTokenFile}, badFTS...)...)
	ftsDown := closedPort(t)
	sw.want(-1, urlState, "", append([]string{"run", "--fts", "http://" + ftsDown, "--token-file", tokenFile}, badFTS...)...)
	sw.reached("Could not validate token", ftsDown)
	// credentials files that others can read are refused, without their content
	looseToken, looseProxy := filepath.Join(dir, "loose-token"), filepath.Join(dir, "loose-proxy")
	noErr(t, os.WriteFile(looseToken, []byte(sw.secrets["token"]+"\n"), 0o640))
	noErr(t, os.WriteFile(looseProxy, []byte("-----BEGIN RSA PRIVATE KEY-----\n"+sw.secrets["proxy key"]+"\n-----END RSA PRIVATE KEY-----\n"), 0o644))
	// credentials a person must fix are permanent (78)
	sw.want(cmd.ExitConfig, urlState, "", "run", "--fts", sim.URL, "--insecure", "--token-file", looseToken)
	sw.want(cmd.ExitConfig, urlState, "", "run", "--fts", sim.URL, "--insecure", "--proxy", looseProxy)
	sw.reached("loose-token is accessible by group or others (mode 0640); run: chmod 600", "loose-proxy is accessible by group or others (mode 0644)")
	// the password given on the command line (against the advice) is not echoed either
	sw.want(cmd.ExitConfig, nil, "", "--state", withPassword(sw.secrets["wrong password"]), "status")

	sw.reached(`"level":"debug"`, "Name or password is incorrect", "connection refused")
	sw.checkOutput()
	sw.checkChildren()
}

// want runs aso and fails the test unless it exits with code (-1: any).
func (sw *secretsWorld) want(code int, env []string, stdin string, args ...string) {
	sw.t.Helper()
	if got, out := sw.aso(env, stdin, args...); got != code && code >= 0 {
		sw.t.Errorf("aso %q: exit code %d, want %d:\n%s", args, got, code, out)
	}
}

// checkOutput fails the test for every secret found in what aso printed.
func (sw *secretsWorld) checkOutput() {
	out := sw.output.String()
	for name, v := range sw.secrets {
		if i := strings.Index(out, v); i >= 0 {
			sw.t.Errorf("the %s appears in aso's output: ...%s...", name, out[max(0, i-300):min(len(out), i+100)])
		}
	}
}

// reached fails the test unless aso's output so far has every one of
// subs: proof that a path whose output is checked was taken.
func (sw *secretsWorld) reached(subs ...string) {
	sw.t.Helper()
	for _, s := range subs {
		if !strings.Contains(sw.output.String(), s) {
			sw.t.Errorf("aso's output lacks %q: the test did not reach the path it checks", s)
		}
	}
}

// checkChildren checks every gfal-rm run: no secret in argv or
// environment, only the allowed variables, the proxy by its path.
func (sw *secretsWorld) checkChildren() {
	argv, err := os.ReadFile(sw.argvFile)
	if err != nil {
		sw.t.Fatalf("gfal-rm never ran: %v", err)
	}
	env, err := os.ReadFile(sw.envFile)
	noErr(sw.t, err)
	runs := strings.Count(string(argv), "\n")
	if runs < 1 { // aso rm's: the runs' only failure (a missing source) wrote nothing to delete
		sw.t.Errorf("gfal-rm ran %d times, want at least 1 (aso rm)", runs)
	}
	// The FTS token is gfal-rm's credential too: it may be in
	// BEARER_TOKEN, and nowhere else.
	others := bytes.ReplaceAll(env, []byte("BEARER_TOKEN="+sw.secrets["token"]+"\x00"), nil)
	for name, v := range sw.secrets {
		if bytes.Contains(argv, []byte(v)) || bytes.Contains(others, []byte(v)) {
			sw.t.Errorf("the %s reached gfal-rm's argv or environment", name)
		}
	}
	for _, run := range strings.Split(strings.TrimSuffix(string(env), "\n"), "\n") {
		var names []string
		for _, kv := range strings.Split(strings.TrimSuffix(run, "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			names = append(names, k)
			if k == "X509_USER_PROXY" && v != sw.proxy {
				sw.t.Errorf("X509_USER_PROXY=%q, want the proxy's path %q", v, sw.proxy)
			}
			if k == "BEARER_TOKEN" && v != sw.secrets["token"] {
				sw.t.Errorf("BEARER_TOKEN is not the FTS token")
			}
		}
		for _, k := range names {
			if !slices.Contains([]string{"PATH", "HOME", "X509_USER_PROXY", "X509_CERT_DIR", "BEARER_TOKEN"}, k) {
				sw.t.Errorf("gfal-rm's environment has %s: want only PATH, HOME, the X.509 locations and the token (%q)", k, names)
			}
		}
		if !slices.Contains(names, "X509_USER_PROXY") {
			sw.t.Errorf("gfal-rm ran without X509_USER_PROXY: %q", names)
		}
	}
}

func requireGfalRmForCmd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatal("gfal-rm is needed: apt-get install gfal2-util-scripts gfal2-plugin-file gfal2-plugin-http gfal2-plugin-mock")
	}
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecrets_PasswordWithURLSyntax: a password written into the state URL
// without escaping its / ? # @ % or space breaks the URL apart; neither
// half of it may appear in any output, whichever way the URL then parses
// (even as a host and a path, for "12/..."), and no request goes out with
// it.
func TestSecrets_PasswordWithURLSyntax(t *testing.T) {
	for _, sep := range []string{"/", "?", "#", "@", "%zz", " ", ":", "%2F"} {
		a, b := secret("left"), secret("right")
		for _, pw := range []string{a + sep + b, "12" + sep + b} {
			u := "http://asoadmin:" + pw + "@127.0.0.1:1/aso_db"
			for _, run := range []result{
				invocation{env: map[string]string{"ASO_STATE": u, "ASO_COUCHDB_TIMEOUT": "1s"}}.run(t, "--user", "u", "--log-level", "debug", "status"),
				aso(t, "--state", u, "--user", "u", "--log-level", "debug", "init"),
				invocation{env: map[string]string{"ASO_STATE": u}, stdin: strings.NewReader("{}\n")}.run(t, "--user", "u", "--log-level", "debug", "enqueue"),
			} {
				out := run.stdout + run.stderr
				if run.code == 0 {
					t.Errorf("password %q: exit 0 against a server that is not there", pw)
				}
				for _, part := range []string{a, b} {
					if strings.Contains(out, part) {
						t.Errorf("password %q: part of it is shown:\n%s", pw, out)
					}
				}
			}
		}
	}
}
