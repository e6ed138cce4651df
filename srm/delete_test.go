package srm_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/srm"
)

// requireGfalRm returns the path of gfal-rm, or fails the test saying how to
// install it.
func requireGfalRm(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("gfal-rm")
	if err != nil {
		t.Fatalf("gfal-rm is needed for this test: %s", srm.GfalRmInstallHint())
	}
	return p
}

// countingWrapper writes a script that appends one line per run, with its
// arguments, to a log, then runs the real gfal-rm. It returns the script and
// a function reading the log's lines.
func countingWrapper(t testing.TB) (string, func() []string) {
	t.Helper()
	gfal := requireGfalRm(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	script := writeScript(t, dir, "gfal-rm-counting", `printf '%s\n' "$*" >> '`+log+`'
exec '`+gfal+`' "$@"`)
	return script, func() []string {
		data, err := os.ReadFile(log)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
}

func writeScript(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitEnded waits until the process whose PID is in pidFile has ended
// (exited, or killed and not yet reaped). A process that is never killed
// keeps the test waiting until go test's -timeout ends it, naming this
// function.
func waitEnded(t testing.TB, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the script did not start its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("PID file %s: %v", pidFile, err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // ended and reaped
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}} // readable once the process has ended
	for {
		if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
			if err != nil {
				t.Fatalf("poll pidfd of %d: %v", pid, err)
			}
			return
		}
	}
}

func touch(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

type want struct {
	status string
	errno  int
	is     error // the result's Err must match, if set
}

func checkResults(t testing.TB, urls []string, got []srm.DeleteResult, wants []want) {
	t.Helper()
	if len(got) != len(urls) {
		t.Fatalf("%d results for %d URLs: %+v", len(got), len(urls), got)
	}
	for i, w := range wants {
		r := got[i]
		if r.URL != urls[i] {
			t.Errorf("result %d is for %q, want %q", i, r.URL, urls[i])
		}
		if r.Status != w.status || r.Errno != w.errno {
			t.Errorf("%s: status %s errno %d (%s), want %s errno %d", r.URL, r.Status, r.Errno, r.Message, w.status, w.errno)
		}
		if ok := r.Status == srm.StatusDeleted || r.Status == srm.StatusMissing; ok != (r.Err == nil) {
			t.Errorf("%s: status %s with Err %v", r.URL, r.Status, r.Err)
		}
		if w.is != nil && !errors.Is(r.Err, w.is) {
			t.Errorf("%s: Err %v, want %v", r.URL, r.Err, w.is)
		}
	}
}

func TestDeleter_Delete(t *testing.T) {
	requireGfalRm(t)
	dir := t.TempDir()
	keep, gone, odd := filepath.Join(dir, "keep"), filepath.Join(dir, "gone"), filepath.Join(dir, `a b;c'"d $(touch x) é`)
	sub := filepath.Join(dir, "sub")
	touch(t, keep, gone, odd)
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	urls := []string{
		"file://" + gone,
		"file://" + filepath.Join(dir, "never-there"),
		"file://" + sub,
		"file://" + odd,
		"mock://host/path?errno=13",
		"mock://host/path?errno=2",
		"mock://host/path?errno=5",
		"mock://host/path",
	}
	d := &srm.Deleter{Timeout: 30 * time.Second}
	got, err := d.Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkResults(t, urls, got, []want{
		{status: srm.StatusDeleted},
		{status: srm.StatusMissing},
		{status: srm.StatusFailed, errno: 21, is: syscall.EISDIR},
		{status: srm.StatusDeleted},
		{status: srm.StatusFailed, errno: 13, is: fs.ErrPermission},
		{status: srm.StatusMissing},
		{status: srm.StatusFailed, errno: 5, is: syscall.EIO},
		{status: srm.StatusDeleted},
	})
	if !strings.Contains(got[2].Message, "is a directory") {
		t.Errorf("directory message %q", got[2].Message)
	}
	if exists(gone) || exists(odd) {
		t.Error("a deleted file is still there")
	}
	if !exists(keep) || !exists(sub) || exists(filepath.Join(dir, "x")) || exists(filepath.Join("/", "x")) {
		t.Error("a file that was not named was touched")
	}
}

func TestDeleter_ContinuesAfterFailure(t *testing.T) {
	wrapper, runs := countingWrapper(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	touch(t, a, b)
	urls := []string{"mock://h/p?errno=13", "file://" + a, "mock://h/q?errno=5", "mock://h/r?errno=2", "file://" + b}
	got, err := (&srm.Deleter{Command: wrapper}).Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkResults(t, urls, got, []want{
		{status: srm.StatusFailed, errno: 13},
		{status: srm.StatusDeleted},
		{status: srm.StatusFailed, errno: 5},
		{status: srm.StatusMissing},
		{status: srm.StatusDeleted},
	})
	// One process for all, one after each failure, each given only the
	// URLs not yet settled.
	r := runs()
	if len(r) != 3 {
		t.Fatalf("%d gfal-rm runs, want 3: %q", len(r), r)
	}
	if !strings.HasSuffix(r[1], "-- file://"+a+" mock://h/q?errno=5 mock://h/r?errno=2 file://"+b) ||
		!strings.HasSuffix(r[2], "-- mock://h/r?errno=2 file://"+b) {
		t.Errorf("runs %q", r)
	}
	if exists(a) || exists(b) {
		t.Error("files after a failure were not deleted")
	}
}

func TestDeleter_Batches(t *testing.T) {
	wrapper, runs := countingWrapper(t)
	urls := []string{"mock://h/1", "mock://h/2", "mock://h/3", "mock://h/2", "mock://h/4", "mock://h/5"}
	got, err := (&srm.Deleter{Command: wrapper, BatchSize: 2, Timeout: 20 * time.Second}).Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wants := make([]want, len(urls))
	for i := range wants {
		wants[i] = want{status: srm.StatusDeleted}
	}
	checkResults(t, urls, got, wants)
	want := []string{"-t 20 -- mock://h/1 mock://h/2", "-t 20 -- mock://h/3 mock://h/4", "-t 20 -- mock://h/5"}
	if r := runs(); strings.Join(r, "|") != strings.Join(want, "|") {
		t.Fatalf("runs %q, want %q (the duplicate URL given once)", r, want)
	}
}

func TestDeleter_BadURLs(t *testing.T) {
	wrapper, runs := countingWrapper(t)
	urls := []string{"relative/path", "-rf", "/absolute/path", "file:///x\nfile:///y", ""}
	got, err := (&srm.Deleter{Command: wrapper}).Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wants := make([]want, len(urls))
	for i := range wants {
		wants[i] = want{status: srm.StatusFailed, is: srm.ErrBadURL}
	}
	checkResults(t, urls, got, wants)
	if r := runs(); len(r) != 0 {
		t.Fatalf("gfal-rm ran for bad URLs: %q", r)
	}
}

func TestDeleter_Environment(t *testing.T) {
	gfal := requireGfalRm(t)
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	script := writeScript(t, dir, "gfal-rm-env", "env > '"+envFile+"'\nexec '"+gfal+"' \"$@\"")
	t.Setenv("ASO_COUCH_PASSWORD", "s3cret")
	d := &srm.Deleter{Command: script, Proxy: "/tmp/x509up_u1000", CertDir: "/etc/grid-security/certificates"}
	if _, err := d.Delete(context.Background(), targets("mock://h/p")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(data)
	for _, w := range []string{"PATH=/usr/bin:/bin\n", "HOME=/nonexistent\n", "X509_USER_PROXY=/tmp/x509up_u1000\n", "X509_CERT_DIR=/etc/grid-security/certificates\n"} {
		if !strings.Contains(env, w) {
			t.Errorf("child environment lacks %q:\n%s", w, env)
		}
	}
	if strings.Contains(env, "s3cret") || strings.Contains(env, "ASO_") {
		t.Errorf("child environment leaks ours:\n%s", env)
	}
}

func TestDeleter_Timeout(t *testing.T) {
	dir := t.TempDir()
	// The child keeps stdout open too: killing only the script would leave
	// Wait blocked on it.
	pidFile := filepath.Join(dir, "child.pid")
	script := writeScript(t, dir, "gfal-rm-hangs", "sleep 3600 &\necho $! > '"+pidFile+"'\nwait")
	d := &srm.Deleter{Command: script, Timeout: time.Second}
	got, err := d.Delete(context.Background(), targets("mock://h/1", "mock://h/2"))
	waitEnded(t, pidFile) // killed with the script, not left to run for an hour
	if !errors.Is(err, srm.ErrTimeout) {
		t.Fatalf("Delete: %v, want ErrTimeout", err)
	}
	checkResults(t, []string{"mock://h/1", "mock://h/2"}, got, []want{
		{status: srm.StatusFailed, is: srm.ErrTimeout},
		{status: srm.StatusSkipped, is: srm.ErrTimeout},
	})
}

// A storage that does not answer costs one timeout, not one per file, and
// does not keep the files elsewhere from being deleted.
func TestDeleter_TimeoutSkipsEndpoint(t *testing.T) {
	gfal := requireGfalRm(t)
	dir := t.TempDir()
	// Like gfal-rm, work through the URLs in order, stopping at a failure;
	// hang on the "slow" hosts.
	script := writeScript(t, dir, "gfal-rm-slow-host", `shift 3
for u in "$@"; do
	case "$u" in mock://slow*) sleep 60 & wait;; esac
	'`+gfal+`' -t 10 "$u" || exit $?
done`)
	urls := []string{"mock://slow/1", "mock://fast/1", "mock://slow:8443/2", "mock://slow/3?x", "mock://fast/2"}
	got, err := (&srm.Deleter{Command: script, Timeout: time.Second}).Delete(context.Background(), targets(urls...))
	if !errors.Is(err, srm.ErrTimeout) {
		t.Fatalf("Delete: %v, want ErrTimeout", err)
	}
	checkResults(t, urls, got, []want{
		{status: srm.StatusFailed, is: srm.ErrTimeout},
		{status: srm.StatusDeleted},
		{status: srm.StatusFailed, is: srm.ErrTimeout}, // another port: tried, and hangs too
		{status: srm.StatusSkipped, is: srm.ErrTimeout},
		{status: srm.StatusDeleted},
	})
}

// gfal-rm's own timeout (ETIMEDOUT) on a URL also skips its endpoint.
func TestDeleter_GfalTimeoutSkipsEndpoint(t *testing.T) {
	requireGfalRm(t)
	urls := []string{"mock://h/p?errno=110", "mock://h/q", "mock://other/r"}
	got, err := (&srm.Deleter{}).Delete(context.Background(), targets(urls...))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkResults(t, urls, got, []want{
		{status: srm.StatusFailed, errno: 110, is: syscall.ETIMEDOUT},
		{status: srm.StatusSkipped, is: srm.ErrTimeout},
		{status: srm.StatusDeleted},
	})
}

func TestDeleter_BatchFailures(t *testing.T) {
	gfal := requireGfalRm(t)
	dir := t.TempDir()
	tests := []struct {
		name   string
		script string
		wants  []want
	}{
		{"usage error", "exec '" + gfal + "' --no-such-option \"$@\"",
			[]want{{status: srm.StatusSkipped, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}}},
		{"crash", "shift 3\nprintf '%s\\tDELETED\\n' \"$1\"\necho 'Traceback (most recent call last):' >&2\nexit 1",
			[]want{{status: srm.StatusDeleted}, {status: srm.StatusFailed, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}}},
		{"output out of step", "printf 'mock://h/other\\tDELETED\\n'",
			[]want{{status: srm.StatusFailed, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}}},
	}
	urls := []string{"mock://h/1", "mock://h/2", "mock://h/3"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := writeScript(t, dir, strings.ReplaceAll(tt.name, " ", "-"), tt.script)
			got, err := (&srm.Deleter{Command: script}).Delete(context.Background(), targets(urls...))
			if !errors.Is(err, srm.ErrGfalRm) {
				t.Fatalf("Delete: %v, want ErrGfalRm", err)
			}
			checkResults(t, urls, got, tt.wants)
		})
	}
}

func TestDeleter_NoGfalRm(t *testing.T) {
	urls := []string{"mock://h/1", "mock://h/2"}
	got, err := (&srm.Deleter{Command: "/nonexistent/gfal-rm"}).Delete(context.Background(), targets(urls...))
	if !errors.Is(err, srm.ErrGfalRm) || !strings.Contains(err.Error(), srm.GfalRmInstallHint()) {
		t.Fatalf("Delete: %v, want ErrGfalRm with the install hint", err)
	}
	checkResults(t, urls, got, []want{{status: srm.StatusSkipped, is: srm.ErrGfalRm}, {status: srm.StatusSkipped, is: srm.ErrGfalRm}})
}

func TestDeleter_CanceledContext(t *testing.T) {
	wrapper, runs := countingWrapper(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	urls := []string{"mock://h/1", "mock://h/2"}
	got, err := (&srm.Deleter{Command: wrapper}).Delete(ctx, targets(urls...))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Delete: %v, want context.Canceled", err)
	}
	checkResults(t, urls, got, []want{{status: srm.StatusSkipped, is: context.Canceled}, {status: srm.StatusSkipped, is: context.Canceled}})
	if r := runs(); len(r) != 0 {
		t.Fatalf("gfal-rm ran with a canceled context: %q", r)
	}
}

// targets are the deletion targets of urls, each of a transfer whose source
// is elsewhere.
func targets(urls ...string) []srm.Target {
	out := make([]srm.Target, len(urls))
	for i, u := range urls {
		out[i] = srm.Target{URL: u, Source: "mock://elsewhere/source"}
	}
	return out
}
