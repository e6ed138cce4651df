package proctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error
)

// Binary returns the path of an aso binary built from this module (without
// the race detector, so that agents start and run at their real speed),
// building it on first use; t fails if the build fails.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "aso-proctest-")
		if buildErr != nil {
			return
		}
		binary = filepath.Join(buildDir, "aso")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, goTool(), "build", "-o", binary, "github.com/asyncstageout/aso")
		if out, err := c.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build of aso: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("proctest: %v", buildErr)
	}
	return binary
}

// goTool is the go command of the toolchain running the tests: `go test`
// puts its own toolchain first in the test's PATH; GOROOT, when set, names
// it too.
func goTool() string {
	if gr := os.Getenv("GOROOT"); gr != "" {
		if p := filepath.Join(gr, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Cleanup removes the binary built by Binary. Call it at the end of
// TestMain.
func Cleanup() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// DefaultLifetime bounds a child's wall-clock lifetime when Options.Lifetime
// is zero: after it the child is killed and the test fails.
const DefaultLifetime = 2 * time.Minute

// Proc is a running aso process.
type Proc struct {
	// Name tells processes apart in logs and failure messages.
	Name string
	// LogPath is the file with the process's standard output and error.
	LogPath string
	// Started is when the process was started.
	Started time.Time

	t    testing.TB
	cmd  *exec.Cmd
	log  *os.File
	logs *logTail
	done chan struct{}

	mu       sync.Mutex
	code     int
	signaled bool
	expired  bool
	ended    time.Time
}

// start runs the aso binary with args and env added to the environment, its
// output in dir/name.log.
func start(t testing.TB, dir, name string, lifetime time.Duration, args, env []string) *Proc {
	t.Helper()
	exe := Binary(t)
	logPath := filepath.Join(dir, name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	logs, err := newLogTail(logPath)
	if err != nil {
		lf.Close()
		t.Fatalf("proctest: %v", err)
	}
	c := exec.Command(exe, args...)
	c.Env = append(childEnv(), env...)
	c.Stdout, c.Stderr = lf, lf
	c.SysProcAttr = sysProcAttr()
	p := &Proc{Name: name, LogPath: logPath, t: t, cmd: c, log: lf, logs: logs, done: make(chan struct{})}
	if err := c.Start(); err != nil {
		lf.Close()
		logs.watch.close()
		t.Fatalf("proctest: start %s: %v", name, err)
	}
	p.Started = time.Now()
	timer := time.AfterFunc(lifetime, func() {
		p.mu.Lock()
		p.expired = true
		p.mu.Unlock()
		_ = p.signal(syscall.SIGKILL)
	})
	go func() {
		err := c.Wait()
		timer.Stop()
		lf.Close()
		p.mu.Lock()
		p.ended = time.Now()
		p.code = c.ProcessState.ExitCode()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.signaled = true
		}
		if err != nil && p.code == 0 {
			p.code = -1
		}
		p.mu.Unlock()
		close(p.done)
		logs.watch.close() // the log is complete
	}()
	t.Cleanup(func() {
		_ = p.signal(syscall.SIGKILL)
		<-p.done
		if p.Expired() {
			t.Errorf("proctest: %s outlived its %s lifetime and was killed\n%s", name, lifetime, p.Tail(40))
		}
	})
	return p
}

// childEnv is the test's environment without aso settings, so that a
// developer's ASO_* variables cannot change a scenario.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ASO_") || strings.HasPrefix(kv, "BEARER_TOKEN_FILE=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (p *Proc) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	err := p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		// gfal-rm and the like die with their agent
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}

// Kill sends SIGKILL to the process and its children and waits for it.
func (p *Proc) Kill() {
	p.t.Helper()
	_ = p.signal(syscall.SIGKILL)
	<-p.done
}

// Term sends SIGTERM (a graceful stop).
func (p *Proc) Term() { p.send(syscall.SIGTERM) }

// Interrupt sends SIGINT, as Ctrl-C on a terminal does (a graceful stop).
func (p *Proc) Interrupt() { p.send(syscall.SIGINT) }

// Pause sends SIGSTOP: the process freezes, holding its lock and leases.
func (p *Proc) Pause() { p.send(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused process.
func (p *Proc) Resume() { p.send(syscall.SIGCONT) }

func (p *Proc) send(sig syscall.Signal) {
	p.t.Helper()
	if err := p.signal(sig); err != nil {
		p.t.Errorf("proctest: %s to %s: %v", sig, p.Name, err)
	}
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits at most d for the process to exit and returns its exit code (-1
// when killed by a signal). It fails the test if the process is still
// running after d, and kills it.
func (p *Proc) Wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Errorf("proctest: %s still running after %s; killing it\n%s", p.Name, d, p.Tail(40))
		p.Kill()
	}
	return p.Code()
}

// Code is the exit code once the process has exited (-1 after a signal).
func (p *Proc) Code() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

// Signaled reports whether the process was ended by a signal.
func (p *Proc) Signaled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signaled
}

// Expired reports whether the process was killed for outliving its lifetime.
func (p *Proc) Expired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.expired
}

// Runtime is how long the process ran (so far, while it runs).
func (p *Proc) Runtime() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended.IsZero() {
		return time.Since(p.Started)
	}
	return p.ended.Sub(p.Started)
}

// Tail returns the last n lines of the process's log, for failure messages.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(log %s: %v)", p.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", p.LogPath, strings.Join(lines, "\n"))
}

// WaitLog waits at most d until the process's log has a line containing
// substr, and reports whether it came; it returns false at once if the
// process exits without writing it. With d <= 0 it looks at the log as it
// is and does not wait.
func (p *Proc) WaitLog(substr string, d time.Duration) bool {
	return p.logs.scan(p.done, d, func(text string, _ map[string]any) bool { return strings.Contains(text, substr) })
}

// Await calls see on each line of the process's log in order (decoded as
// LogLines decodes them), each once, as the process writes them, until see
// returns true; then it returns true. It returns false when the process
// exited and see refused every line, or after d. It wakes on the writes to
// the log (inotify), never on a timer.
func (p *Proc) Await(d time.Duration, see func(l map[string]any) bool) bool {
	return p.logs.scan(p.done, d, func(_ string, l map[string]any) bool { return see(l) })
}

// LogLines returns the JSON log lines of the process so far, decoded; other
// lines (a panic, a race report) are returned with the key "raw". The maps
// are shared with every other reader: do not change them.
func (p *Proc) LogLines() []map[string]any {
	_, lines := p.logs.lines(closed(p.done))
	return lines
}

// LastPhase names where the process was, judged by its last log line (see
// PhaseOf); "start" before its first line.
func (p *Proc) LastPhase() string {
	lines := p.LogLines()
	if len(lines) == 0 {
		return "start"
	}
	return PhaseOf(lines[len(lines)-1])
}

// PhaseOf names where an agent is once it logged the line l: the phase
// field (submit, monitor, record, shutdown), else "start" before the first
// pass and "between passes" after a pass summary.
func PhaseOf(l map[string]any) string {
	if ph, ok := l["phase"].(string); ok && ph != "" {
		return ph
	}
	switch l["msg"] {
	case "pass":
		return "between passes"
	case "run lock taken", "local FTS simulator started", nil:
		return "start"
	}
	return fmt.Sprint(l["msg"])
}

// Pid is the process ID; aso's agent ID (hostname:pid:random) contains it.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }
