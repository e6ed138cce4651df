package srm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Inspector reads what is at a URL, its size (gfal-stat) and its adler32
// checksum (gfal-sum), each command once a URL, under a deadline and with
// the credentials in its environment, as the Deleter runs gfal-rm. The
// zero value is ready to use.
type Inspector struct {
	// Dir is the directory of gfal-stat and gfal-sum; "" looks them up in
	// PATH.
	Dir string
	// Timeout bounds each process (default DefaultTimeout).
	Timeout time.Duration
	// Proxy, CertDir and TokenFile are passed as the Deleter passes them.
	Proxy, CertDir, TokenFile string
}

// Existing is what Check found at a URL.
type Existing struct {
	URL     string
	Missing bool   // there is no such file (gfal's ENOENT)
	Size    int64  // from gfal-stat
	Adler32 string // from gfal-sum: 8 lower-case hexadecimal digits ("" if not read)
	// NotFile is what gfal-stat found there when it is not a regular file
	// ("directory"); Size and Adler32 are then not read.
	NotFile string
	Errno   int   // gfal's error code, when the check failed with one
	Err     error // nil when the file was read or found missing
}

// Check reads the size (gfal-stat) of the file at url and, when that is
// size (or size is 0: not known), its adler32 checksum (gfal-sum), which a
// storage may have to compute by reading the whole file; a file of another
// size has no Adler32. A file that is not there is Missing (gfal's errno
// ENOENT, whatever its message says); anything else that keeps a value
// from being read is an Err naming the command, wrapping syscall.Errno
// when gfal gave an error code (and ErrTimeout, ErrGfalRm or ErrBadURL as
// the Deleter's do).
func (in *Inspector) Check(ctx context.Context, url string, size int64) Existing {
	return in.check(ctx, url, size, true)
}

// Stat reads the size of the file at url with gfal-stat only (see Check).
func (in *Inspector) Stat(ctx context.Context, url string) Existing {
	return in.check(ctx, url, 0, false)
}

func (in *Inspector) check(ctx context.Context, url string, size int64, sum bool) Existing {
	e := Existing{URL: url}
	if reason := checkURL(url); reason != "" {
		e.Err = fmt.Errorf("srm: check %q: %s: %w", url, reason, ErrBadURL)
		return e
	}
	out, err := in.gfal(ctx, "gfal-stat", url)
	if err == nil {
		e.Size, e.NotFile, err = statSize(url, out)
	}
	if err == nil && e.NotFile == "" && sum && (size == 0 || e.Size == size) {
		out, err = in.gfal(ctx, "gfal-sum", url, "ADLER32")
		if err == nil {
			e.Adler32, err = sumValue(url, out)
		}
	}
	var ge *gfalError
	switch {
	case errors.As(err, &ge) && ge.errno == int(syscall.ENOENT):
		e.Missing = true
	case errors.As(err, &ge):
		e.Errno, e.Err = ge.errno, err
	default:
		e.Err = err
	}
	return e
}

// gfalError is a gfal command's own report of the error that stopped it.
type gfalError struct {
	command, url string
	errno        int
	msg          string
}

func (e *gfalError) Error() string {
	return fmt.Sprintf("srm: %s %s: %s", e.command, e.url, e.msg)
}

func (e *gfalError) Unwrap() error {
	if e.errno <= 0 {
		return nil
	}
	return syscall.Errno(e.errno)
}

// gfal runs the gfal command name (gfal-stat or gfal-sum) on url and the
// further args, and returns its standard output, or why it did not give
// one: a *gfalError when the command reported an error with its code.
func (in *Inspector) gfal(ctx context.Context, name, url string, args ...string) (string, error) {
	path, err := exec.LookPath(in.Program(name))
	if err != nil {
		return "", fmt.Errorf("srm: %w (install it with: %s): %w", err, GfalRmInstallHint(), ErrGfalRm)
	}
	p := gfalProcess{Timeout: in.Timeout, Proxy: in.Proxy, CertDir: in.CertDir, TokenFile: in.TokenFile}
	out := p.run(ctx, path, name, append([]string{url}, args...))
	ge := gfalErrorLine.FindStringSubmatch(out.Stderr)
	switch {
	case out.Killed != nil:
		return "", out.Killed
	case strings.Contains(out.Stderr, "Command timed out after"):
		return "", fmt.Errorf("srm: %s %s: %s: %w", name, url, firstLine(out.Stderr), ErrTimeout)
	case out.ExitCode != 0 && ge != nil:
		errno, _ := strconv.Atoi(ge[1])
		return "", &gfalError{command: name, url: url, errno: errno, msg: truncate(ge[3])}
	case out.ExitCode != 0:
		return "", fmt.Errorf("srm: %s %s exited with status %d: %s: %w", name, url, out.ExitCode, lastLine(out.Stderr), ErrGfalRm)
	}
	return out.Stdout, nil
}

// Program is the gfal command name (gfal-stat, gfal-sum) that Check runs:
// the one in Dir when Dir is set and has it, else name, looked up in PATH.
func (in *Inspector) Program(name string) string {
	if in.Dir != "" {
		p := filepath.Join(in.Dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return name
}

// statLine is gfal-stat's size line: "  Size: 1024\tregular file".
var statLine = regexp.MustCompile(`(?m)^\s*Size:\s*(\d+)\s+(.*?)\s*$`)

// statSize reads the size of a regular file from gfal-stat's output, or
// what is there instead of a regular file ("directory").
func statSize(url, stdout string) (int64, string, error) {
	m := statLine.FindStringSubmatch(stdout)
	if m == nil {
		return 0, "", fmt.Errorf("srm: gfal-stat %s printed no size: %q: %w", url, truncate(stdout), ErrGfalRm)
	}
	if m[2] != "regular file" {
		return 0, m[2], nil
	}
	size, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("srm: gfal-stat %s: size %q: %w", url, m[1], ErrGfalRm)
	}
	return size, "", nil
}

// sumValue reads the checksum from gfal-sum's "<url> <checksum>" line,
// which some plugins print as "adler32:<hex>", as 8 lower-case hexadecimal
// digits.
func sumValue(url, stdout string) (string, error) {
	for _, line := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), url+" ")
		if !ok {
			continue
		}
		v := strings.ToLower(strings.TrimSpace(rest))
		v = strings.TrimPrefix(v, "adler32:")
		if n, err := strconv.ParseUint(v, 16, 32); err == nil && len(v) <= 8 {
			return fmt.Sprintf("%08x", n), nil
		}
		return "", fmt.Errorf("srm: gfal-sum %s: %q is not an adler32 checksum: %w", url, truncate(rest), ErrGfalRm)
	}
	return "", fmt.Errorf("srm: gfal-sum %s printed no checksum: %q: %w", url, truncate(stdout), ErrGfalRm)
}
