package cmd_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// watched collects a stream and tells when it holds a text.
type watched struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
	done chan struct{}
}

func watch(r io.Reader) *watched {
	w := &watched{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			w.mu.Lock()
			w.buf.Write(b[:n])
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the stream holds s; the deadline only bounds a hung
// process.
func (w *watched) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.more:
		case <-w.done:
			if !strings.Contains(w.String(), s) {
				t.Fatalf("the stream ended without %q:\n%s", s, w.String())
			}
		case <-deadline:
			t.Fatalf("no %q after a minute:\n%s", s, w.String())
		}
	}
}

var tallyRE = regexp.MustCompile(`(?m)^(\d+) stored, (\d+) already queued, (\d+) rejected$`)

// TestEnqueueProcess_StopsOnASignal: an enqueue reading a pipe whose
// writer keeps it open stops at once on SIGINT or SIGTERM (no SIGKILL
// needed), stores the records read before the signal, says how many and
// up to which line it read, and exits 128 + the signal's number.
func TestEnqueueProcess_StopsOnASignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			flag, path := stateFile(t)
			c := exec.Command(proctest.Binary(t), "enqueue", "-v")
			c.Env = append(os.Environ(), "ASO_STATE=file:"+path, "ASO_CONFIG=", "ASO_USER=bob", "ASO_LOG_FORMAT=json")
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close() // kept open until the process has ended
			// io.Pipes, not StdoutPipe: Wait closes those while the
			// watchers may still read, losing the last lines; it waits
			// for the copy into these.
			stdout, outW := io.Pipe()
			stderr, errW := io.Pipe()
			c.Stdout, c.Stderr = outW, errW
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			out, errs := watch(stdout), watch(stderr)
			// a first batch is stored and reported; the rest waits in the pipe
			go func() { _, _ = io.WriteString(stdin, manyRequests("bob", 1200)) }()
			out.waitFor(t, "line 1000: stored ")
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() {
				err := c.Wait()
				outW.Close()
				errW.Close()
				ended <- err
			}()
			select {
			case err = <-ended:
			case <-time.After(30 * time.Second):
				t.Fatalf("enqueue still runs 30 s after %s\nstdout:\n%s\nstderr:\n%s", tc.name, out, errs)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit %v after %s, want %d\nstderr:\n%s", err, tc.name, tc.code, errs)
			}
			<-out.done
			<-errs.done
			m := tallyRE.FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no count of what was stored:\n%s", out)
			}
			stored, _ := strconv.Atoi(m[1])
			if stored < 1000 {
				t.Errorf("%d stored, want at least the first batch of 1000", stored)
			}
			wantQueue(t, map[state.State]int{state.StateNew: stored}, flag, "--user", "bob")
			msg := errs.String()
			if !strings.Contains(msg, "enqueue stopped by "+tc.name+": the input was read up to line ") ||
				strings.Contains(msg, "releasing claims and the run lock") || !strings.Contains(msg, "no more input is read") {
				t.Errorf("stderr does not say where the input was left, or names the agent's stop:\n%s", msg)
			}
		})
	}
}
