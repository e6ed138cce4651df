package srm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// runOutput is what one gfal-rm process left behind.
type runOutput struct {
	Stdout, Stderr string
	ExitCode       int   // -1 if the process was killed by a signal
	Killed         error // non-nil if we killed it (wraps ErrTimeout or the caller's context error) or it did not start
	Started        bool  // false if it could not be started
}

// gfalErrorLine matches gfal-rm's report of the error that stopped it:
// "gfal-rm error: 13 (Permission denied) - Permission denied".
var gfalErrorLine = regexp.MustCompile(`(?m)^\S+ error: (-?\d+) \(([^\n]*?)\) - ([^\n]*)$`)

// statusWords are the statuses gfal-rm prints after a URL and a tab.
var statusWords = []string{StatusDeleted, StatusMissing, StatusFailed, "SKIP", "RMDIR"}

// interpretRun turns the output of one gfal-rm process run on urls into one
// result per URL.
//
// gfal-rm prints "<url>\t<STATUS>" for each URL in order and stops at the
// first error other than "no such file", which it reports on stderr (after a
// FAILED line, or with no line at all for a directory). So the URLs up to and
// including the failed one are settled; settled says how many, and the
// caller runs the rest again in a new process. err is non-nil if the process
// did not behave as gfal-rm does (usage error, crash, output out of step) or
// was killed; then every result is final and the unsettled ones carry err:
// FAILED for the URL that may have been in progress, SKIPPED for the others.
func interpretRun(urls []string, out runOutput) (results []DeleteResult, settled int, err error) {
	results = make([]DeleteResult, len(urls))
	for i, u := range urls {
		results[i].URL = u
	}
	if !out.Started {
		err := out.Killed
		if err == nil {
			err = fmt.Errorf("srm: gfal-rm did not start: %w", ErrGfalRm)
		}
		return skipFrom(results, 0, err), 0, err
	}
	k, err := readStatusLines(urls, out.Stdout, results)
	ge := gfalErrorLine.FindStringSubmatch(out.Stderr)
	switch {
	case err != nil:
	case out.Killed != nil:
		err = out.Killed
	case strings.Contains(out.Stderr, "Command timed out after"):
		err = fmt.Errorf("srm: gfal-rm: %s: %w", firstLine(out.Stderr), ErrTimeout)
	case ge != nil:
		errno, _ := strconv.Atoi(ge[1])
		i := k
		if k > 0 && results[k-1].Status == StatusFailed {
			i = k - 1 // the FAILED line was printed before the error
		} else if k == len(urls) {
			err = fmt.Errorf("srm: gfal-rm reported %q after a result for every URL: %w", ge[0], ErrGfalRm)
			break
		}
		setFailed(&results[i], errno, ge[3])
		return results, i + 1, nil
	case k == len(urls) && (out.ExitCode == 0 || out.ExitCode == 2 && hasStatus(results, StatusMissing)):
		return results, k, nil
	case out.ExitCode == 2 && k == 0 && strings.Contains(out.Stderr, "usage:"):
		err = fmt.Errorf("srm: gfal-rm usage error: %s: %w", lastLine(out.Stderr), ErrGfalRm)
		return skipFrom(results, 0, err), 0, err
	default:
		err = fmt.Errorf("srm: gfal-rm exited with status %d after %d of %d URLs: %s: %w",
			out.ExitCode, k, len(urls), lastLine(out.Stderr), ErrGfalRm)
	}
	// gfal-rm works through the URLs in order, so the one after the last
	// line may have been in progress, unless that line was a FAILED, after
	// which gfal-rm stops.
	if k < len(urls) && (k == 0 || results[k-1].Status != StatusFailed) {
		results[k] = DeleteResult{URL: urls[k], Status: StatusFailed, Message: err.Error(), Err: err}
		k++
	}
	return skipFrom(results, k, err), k, err
}

// readStatusLines fills results from gfal-rm's "<url>\t<STATUS>" lines, which
// must come in the order of urls, and returns how many it read. Lines of any
// other form (log output) are ignored.
func readStatusLines(urls []string, stdout string, results []DeleteResult) (int, error) {
	k := 0
	for _, line := range strings.Split(stdout, "\n") {
		u, status, ok := strings.Cut(line, "\t")
		if !ok || !isStatus(status) {
			continue
		}
		if k == len(urls) || u != urls[k] {
			want := "no more"
			if k < len(urls) {
				want = strconv.Quote(urls[k])
			}
			return k, fmt.Errorf("srm: gfal-rm output out of step: %q for %q, expected %s: %w", status, u, want, ErrGfalRm)
		}
		r := &results[k]
		switch {
		case status == StatusDeleted, status == StatusMissing:
			r.Status = status
		case status == StatusFailed:
			r.Status = StatusFailed
			r.Err = fmt.Errorf("srm: gfal-rm %s: failed", u)
		case strings.HasPrefix(status, StatusFailed+": "):
			setFailed(r, 0, strings.TrimPrefix(status, StatusFailed+": "))
		default:
			return k, fmt.Errorf("srm: gfal-rm printed unexpected status %q for %q: %w", status, u, ErrGfalRm)
		}
		k++
	}
	return k, nil
}

func isStatus(s string) bool {
	for _, w := range statusWords {
		if s == w || strings.HasPrefix(s, w+" ") || strings.HasPrefix(s, w+":") {
			return true
		}
	}
	return false
}

// setFailed marks r FAILED with gfal-rm's errno and message. Err wraps
// syscall.Errno(errno), so errors.Is(err, fs.ErrPermission) and the like work.
func setFailed(r *DeleteResult, errno int, msg string) {
	r.Status, r.Errno, r.Message = StatusFailed, errno, msg
	switch e := syscall.Errno(errno); {
	case errno <= 0:
		r.Err = fmt.Errorf("srm: gfal-rm %s: %s", r.URL, msg)
	case strings.EqualFold(msg, e.Error()):
		r.Err = fmt.Errorf("srm: gfal-rm %s: %w", r.URL, e)
	default:
		r.Err = fmt.Errorf("srm: gfal-rm %s: %s: %w", r.URL, msg, e)
	}
}

// skipFrom marks results[from:] SKIPPED with err.
func skipFrom(results []DeleteResult, from int, err error) []DeleteResult {
	for i := from; i < len(results); i++ {
		results[i] = DeleteResult{URL: results[i].URL, Status: StatusSkipped, Message: "not attempted: " + err.Error(), Err: err}
	}
	return results
}

func hasStatus(results []DeleteResult, status string) bool {
	for _, r := range results {
		if r.Status == status {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no error message"
	}
	return truncate(s)
}

func truncate(s string) string {
	if len(s) > 500 {
		return s[:500] + "..."
	}
	return s
}
