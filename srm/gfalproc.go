package srm

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gfalProcess is how a gfal command is run: its deadline and the
// credentials handed to it in its environment (never in argv).
type gfalProcess struct {
	Timeout   time.Duration // default DefaultTimeout
	Proxy     string        // X509_USER_PROXY
	CertDir   string        // X509_CERT_DIR
	TokenFile string        // read for BEARER_TOKEN before each process
}

// run runs the gfal command at path once with args after its timeout
// option and "--", with a minimal environment, in its own process group,
// killed with its children when the deadline passes. name names the
// command in errors.
func (p gfalProcess) run(ctx context.Context, path, name string, args []string) runOutput {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	secs := int(math.Ceil(timeout.Seconds()))
	args = append([]string{"-t", strconv.Itoa(secs), "--"}, args...)
	env, err := p.env()
	if err != nil {
		return runOutput{ExitCode: -1, Killed: fmt.Errorf("srm: %v: %w", err, ErrGfalRm)}
	}
	cmd := exec.CommandContext(pctx, path, args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr boundedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := runOutput{
		Stdout: stdout.String(), Stderr: stderr.String(),
		ExitCode: cmd.ProcessState.ExitCode(), Started: cmd.Process != nil,
	}
	switch {
	case ctx.Err() != nil:
		out.Killed = fmt.Errorf("srm: %s stopped: %w", name, ctx.Err())
	case pctx.Err() != nil:
		out.Killed = fmt.Errorf("srm: %s killed after %v: %w", name, timeout, ErrTimeout)
	case err != nil && cmd.ProcessState == nil:
		out.Killed = fmt.Errorf("srm: run %s: %v: %w", path, err, ErrGfalRm)
	}
	return out
}

// env is the child's whole environment: nothing of ours leaks into it.
// Errors never quote the token.
func (p gfalProcess) env() ([]string, error) {
	env := []string{"PATH=" + childPath, "HOME=/nonexistent"}
	if p.Proxy != "" {
		env = append(env, "X509_USER_PROXY="+p.Proxy)
	}
	if p.CertDir != "" {
		env = append(env, "X509_CERT_DIR="+p.CertDir)
	}
	if p.TokenFile != "" {
		b, err := os.ReadFile(p.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("bearer token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" || strings.ContainsAny(tok, "\x00\n\r") {
			return nil, fmt.Errorf("bearer token file %s: want one token on one line", p.TokenFile)
		}
		env = append(env, "BEARER_TOKEN="+tok)
	}
	return env, nil
}
