package srm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/srm"
)

// recordingWrapper writes a script that records its argv (NUL-separated,
// so every element is kept verbatim) and the environment it was started
// with (/proc/PID/environ: not the shell's own variables), then runs the
// real gfal-rm. It returns the script and a function reading the records of
// the last run.
func recordingWrapper(t testing.TB) (string, func() (argv, env []string)) {
	t.Helper()
	gfal := requireGfalRm(t)
	dir := t.TempDir()
	argvFile, envFile := filepath.Join(dir, "argv"), filepath.Join(dir, "env")
	script := writeScript(t, dir, "gfal-rm-recording", `printf '%s\0' "$0" "$@" > '`+argvFile+`'
cat /proc/$$/environ > '`+envFile+`'
exec '`+gfal+`' "$@"`)
	split := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the wrapper left no record: %v", err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	}
	return script, func() ([]string, []string) { return split(argvFile), split(envFile) }
}

// TestDeleter_HostileURLIsOneArgument: a PFN holding shell syntax reaches
// gfal-rm as one argv element, byte for byte, and the file it names (and
// only it) is deleted: no shell ever sees it.
func TestDeleter_HostileURLIsOneArgument(t *testing.T) {
	wrapper, record := recordingWrapper(t)
	dir := t.TempDir()
	// a shell would create the marker file in gfal-rm's working directory (/)
	const marker = "aso-hostile-url-marker"
	name := `a b;touch ` + marker + `;c $(touch ` + marker + `) ` + "`touch " + marker + "`" + ` 'q' "dq" \x ü.root`
	hostile := filepath.Join(dir, name)
	keep := filepath.Join(dir, "a b")
	touch(t, hostile, keep)
	urls := []string{"file://" + hostile, "mock://host/p?errno=2"}
	got, err := (&srm.Deleter{Command: wrapper, Timeout: 30 * time.Second}).Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkResults(t, urls, got, []want{{status: srm.StatusDeleted}, {status: srm.StatusMissing}})
	argv, _ := record()
	if i := slices.Index(argv, "--"); i < 0 || !slices.Equal(argv[i+1:], urls) {
		t.Fatalf("argv %q: want the URLs verbatim, one element each, after --", argv)
	}
	if exists(hostile) {
		t.Error("the file with the hostile name was not deleted")
	}
	if exists(filepath.Join("/", marker)) || exists(filepath.Join(dir, marker)) || !exists(keep) {
		t.Error("the hostile name was interpreted: a command ran or another file was touched")
	}
}

// TestDeleter_OnlyAllowedEnvironment: gfal-rm sees PATH, HOME and the
// X.509 locations, nothing of aso's environment; the proxy is passed by its
// path in X509_USER_PROXY, never by its content, and never in argv.
func TestDeleter_OnlyAllowedEnvironment(t *testing.T) {
	wrapper, record := recordingWrapper(t)
	const proxySecret = "MIIEproxyKEYmaterialSECRET"
	proxy := filepath.Join(t.TempDir(), "x509up_u1000")
	if err := os.WriteFile(proxy, []byte("-----BEGIN RSA PRIVATE KEY-----\n"+proxySecret+"\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"ASO_COUCHDB_PASSWORD": "couch-secret", "BEARER_TOKEN": "token-secret", "BEARER_TOKEN_FILE": "/run/token",
		"X509_USER_CERT": "/home/u/.globus/usercert.pem", "LD_PRELOAD": "/tmp/evil.so", "PYTHONPATH": "/tmp/evil",
	} {
		t.Setenv(k, v)
	}
	d := &srm.Deleter{Command: wrapper, Proxy: proxy, CertDir: "/etc/grid-security/certificates", Timeout: 30 * time.Second}
	if _, err := d.Delete(context.Background(), targets("mock://host/path")); err != nil {
		t.Fatal(err)
	}
	argv, env := record()
	want := []string{
		"PATH=/usr/bin:/bin", "HOME=/nonexistent",
		"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=/etc/grid-security/certificates",
	}
	if !sameSet(env, want) {
		t.Errorf("child environment %q, want exactly %q", env, want)
	}
	all := strings.Join(append(argv, env...), "\n")
	for _, secret := range []string{proxySecret, "couch-secret", "token-secret", "BEGIN RSA"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q reached the child's argv or environment:\n%s", secret, all)
		}
	}
	for _, a := range argv[1:] {
		if a == proxy {
			t.Errorf("the proxy path is in argv %q: it belongs in X509_USER_PROXY only", argv)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestDeleter_TokenInEnvironmentOnly: the bearer token reaches gfal-rm in
// BEARER_TOKEN, read from the file for each process, never in argv; an
// unreadable token file fails the batch without quoting anything.
func TestDeleter_TokenInEnvironmentOnly(t *testing.T) {
	wrapper, record := recordingWrapper(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("eyJtokenSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &srm.Deleter{Command: wrapper, TokenFile: tokenFile, CertDir: "/etc/grid-security/certificates", Timeout: 30 * time.Second}
	if _, err := d.Delete(context.Background(), targets("mock://host/path")); err != nil {
		t.Fatal(err)
	}
	argv, env := record()
	want := []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "X509_CERT_DIR=/etc/grid-security/certificates", "BEARER_TOKEN=eyJtokenSECRET"}
	if !sameSet(env, want) {
		t.Errorf("child environment %q, want exactly %q", env, want)
	}
	if strings.Contains(strings.Join(argv, "\n"), "SECRET") || strings.Contains(strings.Join(argv, "\n"), tokenFile) {
		t.Errorf("the token reached argv %q", argv)
	}
	d.TokenFile = filepath.Join(t.TempDir(), "missing")
	res, err := d.Delete(context.Background(), targets("mock://host/path"))
	if !errors.Is(err, srm.ErrGfalRm) || res[0].Status == srm.StatusDeleted {
		t.Fatalf("missing token file: %v %+v, want ErrGfalRm and no deletion", err, res)
	}
}
