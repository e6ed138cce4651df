package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// terminal is an aso process whose standard streams are a pseudo-terminal.
type terminal struct {
	t   *testing.T
	cmd *exec.Cmd
	tty *os.File
	mu  sync.Mutex
	out bytes.Buffer
	// chunks are the reads of the output, in order: where a screen
	// could be seen between two writes
	chunks [][]byte
	more   chan struct{} // signalled whenever output arrives or ends
	done   chan struct{} // closed when the output has ended
}

// onTerminal starts the aso binary with args, its standard input, output
// and error a pseudo-terminal, as an operator at a shell runs it.
func onTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	return onTerminalSized(t, 40, 200, env, args...)
}

// onTerminalSized is onTerminal with a terminal of rows and cols.
func onTerminalSized(t *testing.T, rows, cols uint16, env []string, args ...string) *terminal {
	t.Helper()
	c := exec.Command(proctest.Binary(t), args...)
	c.Env = append(os.Environ(), env...)
	tty, err := pty.StartWithSize(c, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatalf("start aso on a pseudo-terminal: %v", err)
	}
	term := &terminal{t: t, cmd: c, tty: tty, more: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() { _ = c.Process.Kill(); tty.Close() })
	go term.read()
	return term
}

func (p *terminal) read() {
	defer close(p.done)
	buf := make([]byte, 4096)
	for {
		n, err := p.tty.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		if n > 0 {
			p.chunks = append(p.chunks, bytes.Clone(buf[:n]))
		}
		p.mu.Unlock()
		select {
		case p.more <- struct{}{}:
		default:
		}
		if err != nil { // EIO once the process has closed the terminal
			return
		}
	}
}

func (p *terminal) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the output holds s, failing if the output ends
// first; the deadline only bounds a hung process.
func (p *terminal) waitFor(s string) {
	p.t.Helper()
	deadline := time.After(time.Minute)
	for !strings.Contains(p.output(), s) {
		select {
		case <-p.more:
		case <-p.done:
			if !strings.Contains(p.output(), s) {
				p.t.Fatalf("output ended without %q:\n%s", s, p.output())
			}
		case <-deadline:
			p.t.Fatalf("no %q after a minute:\n%s", s, p.output())
		}
	}
}

// answer types line and Enter.
func (p *terminal) answer(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, line+"\r"); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits for the process and returns its exit code and its output.
func (p *terminal) exit() (int, string) {
	p.t.Helper()
	err := p.cmd.Wait()
	<-p.done
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, p.output()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Exited() {
			return ws.ExitStatus(), p.output()
		}
	}
	p.t.Fatalf("aso on a terminal: %v\n%s", err, p.output())
	return 0, ""
}

// manyRequests returns n requests of user, as JSON lines.
func manyRequests(user string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"user": %q, "source": "T2_A", "destination": "T1_B", "source_lfn": "/store/many/%d", "destination_lfn": "/store/many/%d", "size": 1}`+"\n", user, i, i)
	}
	return b.String()
}

// TestConfirm_OnATerminal: on a terminal, kill --all, retry --failed and
// an action on more than 100 transfers ask first; no changes nothing, yes
// goes ahead, --yes skips the question. Without a terminal nothing is
// asked and the action goes ahead.
func TestConfirm_OnATerminal(t *testing.T) {
	flag, path := stateFile(t)
	invocation{stdin: strings.NewReader(manyRequests("alice", 3) + manyRequests("bob", 120))}.run(t, flag, "enqueue").wantCode(t, 0)
	env := []string{"ASO_STATE=file:" + path, "ASO_CONFIG=", "ASO_LOG_LEVEL=warn"}
	alice := append(env, "ASO_USER=alice")
	queue := func(user string) map[string]any { return statusOf(t, flag, "--user", user) }

	// kill --all: asked even for 3 transfers; "n" changes nothing
	p := onTerminal(t, alice, "kill", "--all")
	p.waitFor("kill 3 transfers of 1 user? [y/N] ")
	p.answer("n")
	if code, out := p.exit(); code != cmd.ExitError || !strings.Contains(out, "not confirmed: nothing was changed") {
		t.Fatalf("kill --all answered no: exit %d\n%s", code, out)
	}
	wantCounts(t, queue("alice"), map[state.State]int{state.StateNew: 3, state.StateKilled: 0})

	// "y" kills them
	p = onTerminal(t, alice, "kill", "--all")
	p.waitFor("kill 3 transfers of 1 user? [y/N] ")
	p.answer("y")
	if code, out := p.exit(); code != 0 || !strings.Contains(out, "3 killed, 0 kill requested") {
		t.Fatalf("kill --all answered yes: exit %d\n%s", code, out)
	}
	wantCounts(t, queue("alice"), map[state.State]int{state.StateNew: 0, state.StateKilled: 3})

	// filters that select more than 100 transfers to change ask first;
	// Enter alone is no
	p = onTerminal(t, env, "kill", "--all-users", "--in-state", "new")
	p.waitFor("kill 120 transfers of 1 user? [y/N] ")
	p.answer("")
	if code, _ := p.exit(); code != cmd.ExitError {
		t.Fatalf("kill of 120 transfers answered with Enter alone: exit %d, want %d", code, cmd.ExitError)
	}
	wantCounts(t, queue("bob"), map[state.State]int{state.StateNew: 120, state.StateKilled: 0})
	// 100 or fewer do not ask: 31 of bob's ("*" does not cross "/")
	bob := append(env, "ASO_USER=bob")
	p = onTerminal(t, bob, "kill", "--in-state", "new", "--lfn", "/store/many/1*")
	if code, out := p.exit(); code != 0 || strings.Contains(out, "[y/N]") || !strings.Contains(out, "31 killed") {
		t.Fatalf("kill of 31 transfers on a terminal: exit %d, want no question\n%s", code, out)
	}
	// what is counted is what would change: 120 selected, 31 to retry
	p = onTerminal(t, bob, "retry", "--in-state", "killed,new")
	if code, out := p.exit(); code != 0 || strings.Contains(out, "[y/N]") || !strings.Contains(out, "31 queued again, 89 not terminal") {
		t.Fatalf("retry of 31 of 120 selected transfers on a terminal: exit %d, want no question\n%s", code, out)
	}
	// --yes: not asked
	p = onTerminal(t, env, "kill", "--all-users", "--in-state", "new", "--yes")
	if code, out := p.exit(); code != 0 || strings.Contains(out, "[y/N]") || !strings.Contains(out, "120 killed") {
		t.Fatalf("kill --yes on a terminal: exit %d\n%s", code, out)
	}
	// a purge of more than 100 asks
	p = onTerminal(t, env, "purge", "--all-users", "--older-than", "1ns")
	p.waitFor("purge 123 transfers of 2 users? [y/N] ")
	p.answer("no")
	if code, _ := p.exit(); code != cmd.ExitError {
		t.Fatalf("purge answered no: exit %d", code)
	}
	wantCounts(t, queue("bob"), map[state.State]int{state.StateKilled: 120})

	// more than 100 IDs given on the command line ask too
	ids := listIDs(t, flag, "--user", "bob", "list")
	p = onTerminal(t, env, append([]string{"retry"}, ids...)...)
	p.waitFor("retry 120 transfers of 1 user? [y/N] ")
	p.answer("n")
	if code, _ := p.exit(); code != cmd.ExitError {
		t.Fatalf("retry of 120 IDs answered no: exit %d", code)
	}
	wantCounts(t, queue("bob"), map[state.State]int{state.StateKilled: 120})

	// no terminal: never asked, done as asked
	c := exec.CommandContext(context.Background(), proctest.Binary(t), "retry", "--all-users", "--in-state", "killed")
	c.Env, c.Stdin = append(os.Environ(), env...), strings.NewReader("n\n")
	out, err := c.CombinedOutput()
	if err != nil || strings.Contains(string(out), "[y/N]") || !strings.Contains(string(out), "123 queued again") {
		t.Fatalf("retry of 123 transfers without a terminal: %v\n%s", err, out)
	}
	wantCounts(t, queue("bob"), map[state.State]int{state.StateNew: 120, state.StateKilled: 0})
}
