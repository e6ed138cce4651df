package srm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Statuses of a DeleteResult.
const (
	StatusDeleted = "DELETED" // the file was removed
	StatusMissing = "MISSING" // there was no such file: as good as deleted
	StatusFailed  = "FAILED"  // gfal-rm tried and failed; Errno and Message say why
	StatusSkipped = "SKIPPED" // not attempted; Err says why
	StatusRefused = "REFUSED" // not attempted: the URL is its transfer's source (ErrIsSource)
)

// Errors of Delete.
var (
	// ErrTimeout: a gfal-rm process ran out of time and was killed.
	ErrTimeout = errors.New("timed out")
	// ErrGfalRm: gfal-rm could not be run, or did not behave as gfal-rm
	// does (usage error, crash, output out of step).
	ErrGfalRm = errors.New("gfal-rm failed")
	// ErrBadURL: a URL was not passed to gfal-rm because it has no scheme
	// or contains control characters.
	ErrBadURL = errors.New("bad URL")
	// ErrIsSource: a URL to delete names the source of the transfer whose
	// copy it is; it was not passed to gfal-rm. aso deletes only what its
	// transfers wrote, and a transfer's source is never that.
	ErrIsSource = errors.New("is the transfer's source")
)

// Target is a destination copy to delete: its URL, and the source PFN of
// the transfer that wrote it, which Delete refuses to delete in its place.
type Target struct {
	URL    string
	Source string
}

// Defaults of a Deleter.
const (
	DefaultTimeout   = 180 * time.Second
	DefaultBatchSize = 100
)

// childPath is the PATH of gfal-rm. gfal-rm runs the first python on PATH
// that has the gfal2 module; /usr/bin/python3 is the one the Debian packages
// install it for.
const childPath = "/usr/bin:/bin"

// maxOutput bounds what is kept of each stream of a gfal-rm process.
const maxOutput = 4 << 20

// GfalRmInstallHint says how to install gfal-rm and the plugins aso uses.
func GfalRmInstallHint() string {
	return "apt-get install gfal2-util-scripts gfal2-plugin-file gfal2-plugin-http gfal2-plugin-mock"
}

// Deleter deletes files with gfal-rm. The zero value is ready to use.
type Deleter struct {
	// Command is the gfal-rm program; default "gfal-rm", looked up in PATH.
	Command string
	// Timeout bounds each gfal-rm process: it is passed as -t (whole
	// seconds, rounded up) and enforced with a deadline that kills the
	// process. Default DefaultTimeout.
	Timeout time.Duration
	// Proxy is the X.509 proxy file, passed as X509_USER_PROXY if set.
	Proxy string
	// CertDir is the CA directory, passed as X509_CERT_DIR if set.
	CertDir string
	// TokenFile is a bearer token file, read before each gfal-rm process
	// (a renewed token is used at once) and passed as BEARER_TOKEN in its
	// environment, never in argv.
	TokenFile string
	// BatchSize is the number of URLs per gfal-rm process; default
	// DefaultBatchSize.
	BatchSize int
}

// DeleteResult is the outcome for one URL.
type DeleteResult struct {
	URL     string
	Status  string // StatusDeleted, StatusMissing, StatusFailed or StatusSkipped
	Errno   int    // gfal-rm's error code for FAILED, when it gave one
	Message string
	Err     error // nil for DELETED and MISSING
}

// Delete removes the URLs of targets with gfal-rm, BatchSize URLs per
// process, and returns one result per target in input order (a URL given
// twice is deleted once and gets the same result twice). A URL that names
// its target's own source (SameFile) is REFUSED with ErrIsSource and never
// given to gfal-rm: a request whose destination is its source must not
// lose its source to the cleanup of a failed attempt. gfal-rm stops at the first URL it fails to
// delete; the URLs after it are run again in a new process, so one bad URL
// never blocks the others. After a timeout, the batch's other URLs on the
// same endpoint (scheme://host:port) are SKIPPED rather than tried.
//
// The error is for failures of a whole batch: gfal-rm missing (wraps
// exec.ErrNotFound and ErrGfalRm), a usage error or crash (ErrGfalRm), a
// process killed by the timeout (ErrTimeout), or ctx ending. The results of
// the URLs it affected carry it too. A URL that is not a URL is FAILED with
// ErrBadURL without failing the batch.
func (d *Deleter) Delete(ctx context.Context, targets []Target) ([]DeleteResult, error) {
	results := make([]DeleteResult, len(targets))
	urls := make([]string, len(targets))
	first := map[string]int{} // URL -> index of its first occurrence
	var todo []string
	for i, tg := range targets {
		u := tg.URL
		urls[i], results[i].URL = u, u
		if SameFile(u, tg.Source) {
			// a refusal is the target's own: the same URL given for
			// another transfer is judged on its own
			err := fmt.Errorf("srm: delete %s: %w", u, ErrIsSource)
			results[i] = DeleteResult{URL: u, Status: StatusRefused, Message: "refused: the URL is the transfer's source", Err: err}
			continue
		}
		if _, dup := first[u]; dup {
			continue // gets its first occurrence's result below
		}
		first[u] = i
		if reason := checkURL(u); reason != "" {
			err := fmt.Errorf("srm: delete %q: %s: %w", u, reason, ErrBadURL)
			results[i] = DeleteResult{URL: u, Status: StatusFailed, Message: reason, Err: err}
			continue
		}
		todo = append(todo, u)
	}
	done, err := d.deleteAll(ctx, todo)
	for _, r := range done {
		results[first[r.URL]] = r
	}
	for i, u := range urls {
		if k, ok := first[u]; ok && results[i].Status != StatusRefused {
			results[i] = results[k]
		}
	}
	return results, err
}

// deleteAll runs the batches of urls (distinct, valid) and returns their results.
func (d *Deleter) deleteAll(ctx context.Context, urls []string) ([]DeleteResult, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	command := d.Command
	if command == "" {
		command = "gfal-rm"
	}
	path, err := exec.LookPath(command)
	if err != nil {
		err = fmt.Errorf("srm: %w (install it with: %s): %w", err, GfalRmInstallHint(), ErrGfalRm)
		return skipFrom(newResults(urls), 0, err), err
	}
	size := d.BatchSize
	if size <= 0 {
		size = DefaultBatchSize
	}
	var results []DeleteResult
	var errs []error
	for start := 0; start < len(urls); start += size {
		batch := urls[start:min(start+size, len(urls))]
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			results = append(results, skipFrom(newResults(urls[start:]), 0, err)...)
			break
		}
		r, err := d.deleteBatch(ctx, path, batch)
		results = append(results, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return results, errors.Join(errs...)
}

// deleteBatch deletes one batch, starting a new process for the URLs after
// each one gfal-rm failed on; there are at most len(urls) processes. After
// a URL times out (gfal-rm's ETIMEDOUT, or our deadline), the batch's other
// URLs on the same endpoint are skipped, so an unreachable storage costs one
// timeout per batch, not one per URL.
func (d *Deleter) deleteBatch(ctx context.Context, path string, urls []string) ([]DeleteResult, error) {
	byURL := make(map[string]DeleteResult, len(urls))
	var errs []error
	for rest := urls; len(rest) > 0; {
		out := d.run(ctx, path, rest)
		r, settled, err := interpretRun(rest, out)
		timedOut := errors.Is(err, ErrTimeout) && ctx.Err() == nil
		if err != nil {
			errs = append(errs, err)
		}
		if err != nil && (!timedOut || settled == 0) {
			settled = len(rest) // every result is final
		}
		for _, x := range r[:settled] {
			byURL[x.URL] = x
		}
		if settled == len(rest) {
			break
		}
		last := r[settled-1]
		rest = rest[settled:]
		if timedOut || last.Errno == int(syscall.ETIMEDOUT) {
			rest = skipEndpoint(rest, last.URL, byURL)
		}
	}
	results := make([]DeleteResult, len(urls))
	for i, u := range urls {
		results[i] = byURL[u]
	}
	return results, errors.Join(errs...)
}

// skipEndpoint records the URLs of rest on the endpoint of timedOut as
// SKIPPED and returns the others.
func skipEndpoint(rest []string, timedOut string, byURL map[string]DeleteResult) []string {
	ep := endpoint(timedOut)
	err := fmt.Errorf("srm: %s timed out on %s: %w", ep, timedOut, ErrTimeout)
	var keep []string
	for _, u := range rest {
		if endpoint(u) != ep {
			keep = append(keep, u)
			continue
		}
		byURL[u] = DeleteResult{URL: u, Status: StatusSkipped, Message: "not attempted: " + err.Error(), Err: err}
	}
	return keep
}

// endpoint is the scheme and authority of a URL: "davs://host:443".
func endpoint(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		scheme, _, _ = strings.Cut(u, ":")
		return scheme + ":"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest
}

// run runs gfal-rm once on urls (see gfalProcess.run).
func (d *Deleter) run(ctx context.Context, path string, urls []string) runOutput {
	return d.process().run(ctx, path, "gfal-rm", urls)
}

// process is how d runs a gfal command.
func (d *Deleter) process() gfalProcess {
	return gfalProcess{Timeout: d.Timeout, Proxy: d.Proxy, CertDir: d.CertDir, TokenFile: d.TokenFile}
}

// urlScheme is what every URL given to gfal-rm must start with; a
// scheme-less argument would be taken as a local path, and one starting with
// '-' as an option.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:.`)

// checkURL returns why u must not be given to gfal-rm, or "".
func checkURL(u string) string {
	for _, c := range []byte(u) {
		if c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
	}
	if !urlScheme.MatchString(u) {
		return "not a URL: want scheme://... such as file:///path or davs://host/path"
	}
	return ""
}

func newResults(urls []string) []DeleteResult {
	r := make([]DeleteResult, len(urls))
	for i, u := range urls {
		r[i].URL = u
	}
	return r
}

// boundedBuffer keeps the first maxOutput bytes written to it.
type boundedBuffer struct{ bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
