package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/internal/gridcert"
	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/state"
)

// ServeOptions are the flags of `aso serve`.
type ServeOptions struct {
	Listen         string
	TLSCert        string
	TLSKey         string
	Htpasswd       string
	ClientCA       string
	GridMapfile    string
	Operators      []string
	AllowAnonymous bool
	CacheTTL       time.Duration
	StaleAfter     time.Duration
	PageSize       int
}

// AddFlags registers the flags of `aso serve`.
func (o *ServeOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address to listen on, HOST:PORT (the loopback interface unless told otherwise)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain)")
	f.StringVar(&o.TLSKey, "tls-key", "", "the PEM private key of --tls-cert")
	f.StringVar(&o.Htpasswd, "htpasswd", "", "basic auth: a file of user:bcrypt-hash lines (htpasswd -B); needs --tls-cert unless listening on loopback")
	f.StringVar(&o.ClientCA, "client-ca", "", "accept client certificates and grid proxies issued under these CAs: a PEM file or a directory of them (such as /etc/grid-security/certificates); needs --tls-cert and --grid-mapfile")
	f.StringVar(&o.GridMapfile, "grid-mapfile", "", `map certificate DNs to users: a file of "DN" user lines`)
	f.StringSliceVar(&o.Operators, "operators", nil, "users who may see every user's transfers and the metrics (comma-separated); any other user sees their own")
	f.BoolVar(&o.AllowAnonymous, "allow-anonymous", false, "serve every user's transfers without authentication on an address that is not loopback")
	f.DurationVar(&o.CacheTTL, "cache-ttl", serve.DefaultCacheTTL, "how long counts, locks and summaries read from the store are reused by later pages and scrapes")
	f.DurationVar(&o.StaleAfter, "stale-after", state.DefaultStaleAfter, "the status page reports submitted transfers not updated for this long as stale")
	f.IntVar(&o.PageSize, "page-size", serve.DefaultPageSize, "transfers per list page")
}

func newServeCommand(g *Globals) *cobra.Command {
	o := &ServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a read-only status page, a JSON API and fleet-wide Prometheus metrics",
		Long: "serve answers on --listen with a status page of the store's transfers (an overview, a\n" +
			"page per user, per link and per transfer saying where it is and why it is not done yet,\n" +
			"filtered lists), the same as JSON under /api/, and fleet-wide metrics on /metrics.\n" +
			"It only reads the store. Pages and scrapes reuse what was read for --cache-ttl.\n" +
			"Without --htpasswd or --client-ca everyone who can connect sees everything, which is\n" +
			"allowed on loopback only unless --allow-anonymous is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runServe(ctx context.Context, o *ServeOptions, g *Globals) error {
	auth, tlsCfg, err := o.check()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return permanent(fmt.Errorf("serve: listen on %s: %w", o.Listen, err))
	}
	defer ln.Close()
	return withStore(readOnly(ctx), g, "", func(st state.Store) error {
		srv, err := serve.New(serve.Options{Store: st, Auth: auth, CacheTTL: o.CacheTTL, StaleAfter: o.StaleAfter, PageSize: o.PageSize,
			ErrorLog: func(r *http.Request, err error) {
				g.Log.WithField("path", r.URL.Path).WithError(err).Warn("serve: reading the store failed")
			}})
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: srv.Handler(), TLSConfig: tlsCfg,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
			MaxHeaderBytes: 64 << 10, ErrorLog: log.New(g.Log.WriterLevel(logrus.DebugLevel), "", 0)}
		scheme := "http"
		if tlsCfg != nil {
			scheme = "https"
		}
		g.Log.WithField("url", scheme+"://"+ln.Addr().String()+"/").Info("aso serve: listening")
		return serveUntil(ctx, hs, ln, tlsCfg != nil)
	})
}

// serveUntil serves on ln until ctx ends, then shuts down, letting the
// requests under way finish for a few seconds.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener, useTLS bool) error {
	done := make(chan error, 1)
	go func() {
		if useTLS {
			done <- hs.ServeTLS(ln, "", "")
		} else {
			done <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// check checks the flags together and reads what they name: the
// authentication and the TLS configuration (nil without TLS).
func (o *ServeOptions) check() (*serve.Auth, *tls.Config, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, nil, usagef("give --tls-cert and --tls-key together")
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, nil, usagef("--listen %q: want HOST:PORT, such as 127.0.0.1:8080", o.Listen)
	}
	loopback := host == "localhost" || (net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback())
	withTLS := o.TLSCert != ""
	switch {
	case o.ClientCA != "" && (!withTLS || o.GridMapfile == ""):
		return nil, nil, usagef("--client-ca: client certificates need --tls-cert and --tls-key, and --grid-mapfile to map their DNs to users")
	case o.GridMapfile != "" && o.ClientCA == "":
		return nil, nil, usagef("--grid-mapfile: give --client-ca too")
	case o.Htpasswd != "" && !withTLS && !loopback:
		return nil, nil, usagef("--htpasswd on %s without --tls-cert would send passwords in the clear: serve HTTPS, or listen on loopback", o.Listen)
	case o.Htpasswd == "" && o.ClientCA == "" && !loopback && !o.AllowAnonymous:
		return nil, nil, usagef("--listen %s is not loopback: give --htpasswd or --client-ca (with --tls-cert) so that each user sees their own transfers, or --allow-anonymous", o.Listen)
	case o.Htpasswd == "" && o.ClientCA == "" && len(o.Operators) > 0:
		return nil, nil, usagef("--operators: without --htpasswd or --client-ca nobody is authenticated (everyone sees everything)")
	}
	var auth *serve.Auth
	if o.Htpasswd != "" || o.ClientCA != "" {
		var pool *x509.CertPool
		if o.ClientCA != "" {
			if pool, err = readCAs(o.ClientCA); err != nil {
				return nil, nil, permanent(err)
			}
		}
		auth, err = serve.NewAuth(serve.AuthOptions{Htpasswd: o.Htpasswd, ClientCAs: pool, GridMapfile: o.GridMapfile, Operators: o.Operators})
		if err != nil {
			return nil, nil, permanent(fmt.Errorf("serve: %w", err))
		}
	}
	if !withTLS {
		return auth, nil, nil
	}
	cfg, err := o.tlsConfig(auth)
	return auth, cfg, err
}

// tlsConfig loads the server's certificate, with the client
// certificate checks of auth.
func (o *ServeOptions) tlsConfig(auth *serve.Auth) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, permanent(fmt.Errorf("serve: --tls-cert %s, --tls-key %s: %w", o.TLSCert, o.TLSKey, err))
	}
	return auth.TLSConfig(cert), nil
}

// readCAs reads the PEM certificates of a file, or of a grid CA
// directory (gridcert.CAPool).
func readCAs(path string) (*x509.CertPool, error) {
	pool, n, err := gridcert.CAPool(path)
	if err != nil {
		return nil, fmt.Errorf("serve: --client-ca: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("serve: --client-ca %s: no PEM certificate found", path)
	}
	return pool, nil
}
