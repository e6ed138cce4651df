package fts

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultTimeout            = 30 * time.Second
	DefaultMaxElapsed         = 2 * time.Minute
	DefaultMinDelegation      = 12 * time.Hour
	DefaultDelegationLifetime = 24 * time.Hour
	DefaultRetryInitial       = 500 * time.Millisecond
	// MaxJobsPerQuery is the most job ids put in one status or cancel request.
	MaxJobsPerQuery = 100
)

// Config configures a Client. Endpoint and one credential (ProxyPath or
// TokenFile) are required; when both are set the token is used and the
// proxy ignored.
type Config struct {
	Endpoint           string        // https://host:8446 (required)
	ProxyPath          string        // X.509 proxy PEM: cert + key + chain in one file
	CertDir            string        // CA directory; "" means the system pool
	TokenFile          string        // OAuth2 bearer token file (alternative to ProxyPath)
	Insecure           bool          // skip server verification (tests/dev only)
	Timeout            time.Duration // per HTTP request (default 30 s); an earlier context deadline wins
	MaxElapsed         time.Duration // bound of the retry loop for transient errors (default 2 min)
	MinDelegation      time.Duration // re-delegate when the server's delegation has less left (default 12 h)
	DelegationLifetime time.Duration // asked lifetime, capped by the proxy's remaining life (default 24 h)
	// RetryInitial is the first delay of the retry loop (default 500 ms).
	RetryInitial time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// WrapTransport, if set, wraps the transport New builds, e.g. to log
	// every request.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// OnRetry, if set, is called before each retry of a failed request with
	// the request's method and path (no query), the error, the wait before
	// the next try and the time spent on the request so far.
	OnRetry func(method, path string, err error, wait, elapsed time.Duration)
}

// Client talks to one FTS3 server with one identity. It is safe for
// concurrent use.
type Client struct {
	cfg   Config
	base  *url.URL
	hc    *http.Client
	proxy *proxySource // nil with a token
	token *tokenFile   // nil with a proxy

	mu  sync.Mutex
	who *WhoAmI // cached whoami reply

	dlgMu sync.Mutex // one delegation at a time
}

// New checks cfg, loads the credential and returns a Client. It refuses a
// proxy or token file readable by group or others, and an expired proxy,
// before any request is made.
func New(cfg Config) (*Client, error) {
	base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	setDefaults(&cfg)
	c := &Client{cfg: cfg, base: base}
	switch {
	case cfg.TokenFile != "":
		if c.token, err = loadTokenFile(cfg.TokenFile); err != nil {
			return nil, err
		}
	case cfg.ProxyPath != "":
		if c.proxy, err = newProxySource(cfg.ProxyPath, cfg.Now()); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("fts: no credentials: give an X.509 proxy file or a token file")
	}
	tlsConf, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	// HTTP/1.1, as FTS's own clients speak: client-certificate servers
	// (Apache with mod_gridsite) are not always ready for HTTP/2.
	tr.ForceAttemptHTTP2 = false
	c.hc = &http.Client{Transport: tr}
	if cfg.WrapTransport != nil {
		c.hc.Transport = cfg.WrapTransport(tr)
	}
	return c, nil
}

// CheckEndpoint says what is wrong with endpoint as the URL of an FTS3
// server's REST interface, or nil.
func CheckEndpoint(endpoint string) error {
	_, err := endpointURL(endpoint)
	return err
}

func parseEndpoint(endpoint string) (*url.URL, error) {
	if endpoint == "" {
		return nil, errors.New("fts: no endpoint: give the FTS3 server URL, e.g. https://fts3.example.org:8446")
	}
	u, err := endpointURL(endpoint)
	if err != nil {
		return nil, fmt.Errorf("fts: endpoint %q: %w", endpoint, err)
	}
	return u, nil
}

func endpointURL(endpoint string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(endpoint, "/"))
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL once, in the caller's words
		}
		return nil, fmt.Errorf("not a URL (%v): want https://host:port", err)
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "":
		return nil, errors.New("want https://host:port")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, errors.New("must not carry a query, fragment or user")
	}
	return u, nil
}

func setDefaults(cfg *Config) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxElapsed <= 0 {
		cfg.MaxElapsed = DefaultMaxElapsed
	}
	if cfg.MinDelegation <= 0 {
		cfg.MinDelegation = DefaultMinDelegation
	}
	if cfg.DelegationLifetime <= 0 {
		cfg.DelegationLifetime = DefaultDelegationLifetime
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = DefaultRetryInitial
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// DefaultProxyPath resolves the proxy file when no --proxy flag was given
// (the caller checks its flag first): $X509_USER_PROXY, else
// /tmp/x509up_u<uid>.
func DefaultProxyPath(getenv func(string) string, uid int) string {
	if p := getenv("X509_USER_PROXY"); p != "" {
		return p
	}
	return fmt.Sprintf("/tmp/x509up_u%d", uid)
}

// endpointURL joins path (already escaped) and query to the endpoint.
func (c *Client) endpointURL(path, query string) string {
	u := *c.base
	u.RawPath = ""
	u.Path = ""
	s := u.String() + strings.TrimRight(c.base.EscapedPath(), "/") + path
	if query != "" {
		s += "?" + query
	}
	return s
}

// tlsConfig builds the client TLS settings: the proxy as client
// certificate and the CA directory as roots.
func (c *Client) tlsConfig() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.cfg.Insecure} //nolint:gosec // opt-in for tests and development
	if c.cfg.CertDir != "" && !c.cfg.Insecure {
		pool, err := loadCertDir(c.cfg.CertDir)
		if err != nil {
			return nil, err
		}
		conf.RootCAs = pool
	}
	if c.proxy != nil {
		// Always offer the proxy: grid servers list many CAs, and a proxy's
		// issuer is the user certificate, which is in no such list.
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &c.proxy.current().tlsCert, nil
		}
	}
	return conf, nil
}
