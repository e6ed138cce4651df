package couch

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-kivik/kivik/v4"
	"github.com/go-kivik/kivik/v4/couchdb"
)

// DefaultTimeout bounds every HTTP request when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Options say how to reach the database.
type Options struct {
	// URL names the database: couchdb://host:5984/db (plain HTTP),
	// http://host:port/db or https://host:port/db. Credentials in the URL
	// take precedence over Username and Password. A comma-separated list
	// names several nodes of one cluster (see splitNodes): requests go to
	// one node and fail over to the next when it cannot be reached, times
	// out or answers 5xx.
	URL string
	// Username and Password authenticate with HTTP basic auth when set.
	Username, Password string
	// CAFile is a PEM bundle of the CAs to trust for https (default: the
	// system pool).
	CAFile string
	// Timeout bounds every HTTP request (default DefaultTimeout).
	Timeout time.Duration
	// Transport, when set, replaces the default HTTP transport (tests wrap
	// it to count requests). CAFile is then the caller's business.
	Transport http.RoundTripper
	// WrapTransport, if set, wraps the transport (Transport or the default
	// one), e.g. to log every request.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Checked, when set, is what the database's information said to a
	// process that opened it before (a fleet, for the agents it starts):
	// Open then sends no request of its own.
	Checked *Checked
}

// Checked is what opening a database learnt of it (see Store.Checked).
type Checked struct {
	// ReadQuorum is the r of the database's cluster (0: not a cluster,
	// or the server does not say).
	ReadQuorum int
	// Identity is who the credentials are (GET /_session), as the process
	// that checked them found; the store does not use it.
	Identity Identity
}

// target is a parsed Options.URL.
type target struct {
	server string // scheme://host:port/prefix/, without credentials
	db     string
	user   string
	pass   string
}

func parseURL(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil && strings.Contains(raw, "@") {
		// the parser's message may quote part of the password
		return target{}, fmt.Errorf("couch: database URL %s: not a valid URL; %s", Redact(raw), escapeAdvice)
	}
	if err != nil {
		return target{}, fmt.Errorf("couch: database URL %s: %w", Redact(raw), errors.Unwrap(err))
	}
	if strayAt(u) {
		// "http://user:12/pw@host/db" parses as host "user:12", path
		// "/pw@host/db": it must not be requested, nor shown
		return target{}, fmt.Errorf("couch: database URL %s: an @ outside the user information; %s", Redact(raw), escapeAdvice)
	}
	switch u.Scheme {
	case "couchdb":
		u.Scheme = "http"
	case "http", "https":
	default:
		return target{}, fmt.Errorf("couch: database URL %s: scheme must be couchdb, http or https", Redact(raw))
	}
	if u.Host == "" {
		return target{}, fmt.Errorf("couch: database URL %s: no host", Redact(raw))
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	i := strings.LastIndex(p, "/")
	db, err := url.PathUnescape(p[i+1:])
	if i < 0 || err != nil || db == "" {
		return target{}, fmt.Errorf("couch: database URL %s: no database name in the path (want couchdb://HOST:PORT/DB)", Redact(raw))
	}
	t := target{db: db}
	if u.User != nil {
		t.user = u.User.Username()
		t.pass, _ = u.User.Password()
	}
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	u.Path, u.RawPath = "", ""
	t.server = u.String() + p[:i+1]
	return t, nil
}

// escapeAdvice says how to give a password with URL syntax in it.
const escapeAdvice = "escape / ? # @ % and spaces of the password as %XX, or give it in ASO_COUCHDB_PASSWORD"

// strayAt reports whether u, a URL with a host, has an @ outside its user
// information: a password with unescaped URL syntax that the parser took
// for a host, a path, a query or a fragment. (A file: URL has no host and
// may have an @ in its path.)
func strayAt(u *url.URL) bool {
	return u.Host != "" && strings.Contains(u.Host+u.Path+u.RawPath+u.RawQuery+u.Fragment, "@")
}

// Redact returns url with its password replaced by "xxxxx". A string that
// does not parse as a URL, or in which an @ is left outside the user
// information (a password with unescaped / ? # in it), loses everything
// between "//" and the last "@". A list of node URLs is redacted URL by
// URL.
func Redact(raw string) string {
	if parts := splitNodes(raw); len(parts) > 1 {
		for i, p := range parts {
			parts[i] = redactOne(p)
		}
		return strings.Join(parts, ",")
	}
	return redactOne(raw)
}

func redactOne(raw string) string {
	if u, err := url.Parse(raw); err == nil && !strayAt(u) {
		return u.Redacted()
	}
	if i, j := strings.Index(raw, "//"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
		return raw[:i+2] + "xxxxx" + raw[j:]
	}
	return raw
}

func (o Options) httpClient(nodes []target) (*http.Client, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rt := o.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 8
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("couch: CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("couch: CA file %s: no PEM certificate in it", o.CAFile)
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		rt = tr
	}
	if o.WrapTransport != nil {
		rt = o.WrapTransport(rt)
	}
	if len(nodes) > 1 {
		f, err := newFailover(rt, nodes)
		if err != nil {
			return nil, err
		}
		rt = f
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
}

// connect builds the kivik client of o, and the HTTP client under it.
func connect(o Options) (*kivik.Client, target, *http.Client, error) {
	nodes, err := parseNodes(o.URL)
	if err != nil {
		return nil, target{}, nil, err
	}
	t := nodes[0]
	if t.user == "" {
		t.user, t.pass = o.Username, o.Password
	}
	hc, err := o.httpClient(nodes)
	if err != nil {
		return nil, t, nil, err
	}
	// Request bodies go uncompressed: gzip would cost the agent a tenth of
	// its CPU time and about 1 MiB of compressor state per request, and the
	// server as much again to inflate them, to save bandwidth that a state
	// store next to its agents does not lack.
	opts := []kivik.Option{couchdb.OptionHTTPClient(hc), couchdb.OptionUserAgent("aso"), couchdb.OptionNoRequestCompression()}
	if t.user != "" {
		opts = append(opts, couchdb.BasicAuth(t.user, t.pass))
	}
	c, err := kivik.New("couch", t.server, opts...)
	if err != nil {
		return nil, t, nil, fmt.Errorf("couch: client for %s: %w", t.server, err)
	}
	return c, t, hc, nil
}
