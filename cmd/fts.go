package cmd

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/srm"
)

// FTSOptions are the flags that select and authenticate to an FTS3 server.
type FTSOptions struct {
	Endpoint      string
	Proxy         string
	TokenFile     string
	CertDir       string
	Insecure      bool
	Timeout       time.Duration
	MinDelegation time.Duration
	SimSeed       int64
	SimFailure    float64
	SimTransfer   time.Duration
	// instance names the in-process simulator Open started ("local:UUID")
	instance string
}

// AddFlags registers the FTS flags on cmd.
func (o *FTSOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Endpoint, "fts", "local", `FTS3 REST endpoint (https://HOST:8446), or "local" for the in-process simulator, which copies file:// URLs and refuses every other; the default with a file store only: with CouchDB it must be given`)
	f.StringVar(&o.Proxy, "proxy", "", "X.509 proxy (default $X509_USER_PROXY, then /tmp/x509up_u<uid>)")
	f.StringVar(&o.TokenFile, "token-file", "", "OAuth2 bearer token file instead of a proxy (default $BEARER_TOKEN_FILE)")
	f.StringVar(&o.CertDir, "cert-dir", "", "CA certificates directory (default $X509_CERT_DIR, then /etc/grid-security/certificates)")
	f.BoolVar(&o.Insecure, "insecure", false, "do not verify the FTS server's certificate (testing only)")
	f.DurationVar(&o.Timeout, "fts-timeout", 30*time.Second, "timeout of each FTS request")
	f.DurationVar(&o.MinDelegation, "min-delegation", 12*time.Hour, "re-delegate the proxy when the server's copy has less left")
	f.Int64Var(&o.SimSeed, "sim-seed", 1, `seed of the local simulator (--fts local)`)
	f.Float64Var(&o.SimFailure, "sim-failure-rate", 0, `per-file failure probability of the local simulator (--fts local)`)
	f.DurationVar(&o.SimTransfer, "sim-transfer-time", 0, `how long each file of the local simulator stays active (--fts local)`)
}

func (o *FTSOptions) proxyPath(g *Globals) string {
	if o.Proxy != "" || o.TokenFile != "" || o.Endpoint == "local" {
		return o.Proxy
	}
	return fts.DefaultProxyPath(g.getenv, os.Getuid())
}

// tokenFile is --token-file, else $BEARER_TOKEN_FILE; "" with the local
// simulator, whose token is its own.
func (o *FTSOptions) tokenFile(g *Globals) string {
	if o.Endpoint == "local" {
		return ""
	}
	return cmp.Or(o.TokenFile, g.getenv("BEARER_TOKEN_FILE"))
}

// certDir is --cert-dir, else $X509_CERT_DIR, else the grid's
// /etc/grid-security/certificates.
func (o *FTSOptions) certDir(g *Globals) string {
	return cmp.Or(o.CertDir, g.getenv("X509_CERT_DIR"), "/etc/grid-security/certificates")
}

// checkChosen refuses a run on a CouchDB store whose --fts was given
// nowhere (command line, ASO_FTS or the configuration file): the
// simulator is the default of a file store only, never the silent choice
// of a shared, production store.
func (o *FTSOptions) checkChosen(g *Globals) error {
	u := g.stateURL()
	if g.sources["fts"] != fromDefault || strings.HasPrefix(u, "file:") {
		return nil
	}
	return permanentError{fmt.Errorf("no FTS server chosen for the CouchDB store %s: the in-process simulator (--fts local) is the default "+
		"with a file store only; give --fts https://HOST:8446 (or ASO_FTS, or fts: in the config file), or --fts local to run the simulator on purpose", RedactURL(u))}
}

// localFTS names the in-process simulator in logs.
const localFTS = "in-process simulator (file:// only)"

// Open returns a client for the configured server, and logs which server
// that is. For "local" it starts the simulator in-process on loopback,
// copying file:// URLs and refusing every other at submission (nothing is
// reported done that was not copied), and authenticates with a random
// token; the returned function stops it. Each simulator it starts is an
// instance of its own (endpointName).
func (o *FTSOptions) Open(ctx context.Context, g *Globals) (*fts.Client, func(), error) {
	if o.Endpoint != "local" {
		g.Log.WithField("fts", o.Endpoint).Info("FTS: " + o.Endpoint)
		cfg := fts.Config{Endpoint: o.Endpoint, Insecure: o.Insecure, Timeout: o.Timeout, MinDelegation: o.MinDelegation,
			WrapTransport: g.httpLog("fts", false), OnRetry: g.ftsRetryLog()}
		cfg.TokenFile = o.tokenFile(g)
		if cfg.TokenFile == "" {
			cfg.ProxyPath = o.proxyPath(g)
		}
		cfg.CertDir = o.certDir(g)
		if strings.HasPrefix(strings.ToLower(o.Endpoint), "http://") {
			// plain HTTP (a simulator served elsewhere) has no certificate to verify
			cfg.CertDir = cmp.Or(o.CertDir, g.getenv("X509_CERT_DIR"))
		}
		c, err := fts.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		if err := c.EnsureDelegation(ctx); err != nil {
			return nil, nil, fmt.Errorf("fts delegation: %w", err)
		}
		return c, func() {}, nil
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	srv, err := ftssim.Start("127.0.0.1:0", ftssim.Options{
		Seed: o.SimSeed, FailureRate: o.SimFailure, LocalFiles: true, LocalOnly: true, Tokens: []string{token}, Speed: 1,
		TransferTime: o.SimTransfer,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the local FTS simulator: %w", err)
	}
	o.instance = "local:" + uuid.NewString()
	dir, err := os.MkdirTemp("", "aso-fts-local-")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	cleanup := func() { srv.Close(); os.RemoveAll(dir) }
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte(token), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	c, err := fts.New(fts.Config{Endpoint: srv.URL, TokenFile: tf, Timeout: o.Timeout,
		WrapTransport: g.httpLog("fts", false), OnRetry: g.ftsRetryLog()})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	// Warn: a run meant for a real server lands here when --fts (ASO_FTS,
	// or fts: in the config file) is missing or misspelled.
	g.Log.WithField("fts", localFTS).WithField("url", srv.URL).
		Warn("FTS: " + localFTS + "; give --fts https://HOST:8446 (or ASO_FTS, or fts: in the config file) to use a real FTS server")
	return c, cleanup, nil
}

// gfalCertDir is the CA directory given to gfal-rm: the one of certDir when
// a site needs it, else only one given by --cert-dir or X509_CERT_DIR.
func (o *FTSOptions) gfalCertDir(g *Globals, sites *srm.Sites) string {
	if sitesNeedCA(sites) {
		return o.certDir(g)
	}
	return cmp.Or(o.CertDir, g.getenv("X509_CERT_DIR"))
}
