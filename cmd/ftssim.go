package cmd

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/internal/gridcert"
)

// FTSSimOptions are the flags of `aso fts-sim`.
type FTSSimOptions struct {
	Listen            string
	TLSDir            string
	Speed             float64
	FailureRate       float64
	Seed              int64
	LocalFiles        bool
	RequireDelegation bool
	QueueDelay        time.Duration
	StartDelay        time.Duration
	TransferTime      time.Duration
	DefaultRetry      int
	OAuth2            bool
	FailureReasons    string
	CheckDuplicates   bool
}

// AddFlags registers the fts-sim flags on cmd.
func (o *FTSSimOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8446", "address to listen on (port 0 picks a free port)")
	f.StringVar(&o.TLSDir, "tls-dir", "", "serve HTTPS with the certificates in this directory (see above); default plain HTTP")
	f.Float64Var(&o.Speed, "speed", 1, "simulated time runs this many times faster than real time")
	f.Float64Var(&o.FailureRate, "failure-rate", 0, "probability that a transfer attempt fails")
	f.Int64Var(&o.Seed, "seed", 1, "seed of every simulated random choice")
	f.BoolVar(&o.LocalFiles, "local-files", false, "accept file:// URLs and really copy them (real FTS refuses them)")
	f.BoolVar(&o.RequireDelegation, "require-delegation", false, "X.509 clients must delegate a proxy before submitting (419 otherwise)")
	f.DurationVar(&o.QueueDelay, "queue-delay", 2*time.Second, "simulated time a file waits in SUBMITTED")
	f.DurationVar(&o.StartDelay, "start-delay", time.Second, "simulated time a file stays READY")
	f.DurationVar(&o.TransferTime, "transfer-time", 5*time.Second, "simulated time a file stays ACTIVE")
	f.IntVar(&o.DefaultRetry, "default-retry", 0, "FTS-side retries of recoverable failures for jobs that ask for retry 0")
	f.BoolVar(&o.OAuth2, "oauth2", false, "accept bearer tokens, as a server with OAuth2 enabled (otherwise a token gets 400)")
	f.BoolVar(&o.CheckDuplicates, "check-duplicates", false, "refuse a job with 409 \"The submission is duplicated\" when a file of it writes the destination of an active file, as a server with fts3.CheckDuplicates")
	f.StringVar(&o.FailureReasons, "failure-reasons", "", "file of failure reasons, one a line (\"SCOPE [errno] message\"), one drawn at random for each failed attempt; default a built-in set")
}

const ftsSimLong = `Serve an FTS3 simulator that speaks the FTS3 REST API, for demos and manual
testing. It keeps its jobs in memory and prints the URL it serves, then runs
until interrupted.

With --oauth2 it accepts any bearer token (Authorization: Bearer ...), as a
server with OAuth2 enabled; without it a token gets 400, as on a real server
without OAuth2. Without --tls-dir it serves plain HTTP, so --oauth2 is then
required. With --tls-dir DIR it serves HTTPS and accepts X.509 client
certificates and RFC 3820 proxies (plain or VOMS). DIR holds:
  hostcert.pem   the server certificate (followed by any intermediates)
  hostkey.pem    the server's unencrypted private key
  *.pem, *.crt, *.0 (any other file named so)
                 CA certificates that client certificates must chain to,
                 as in /etc/grid-security/certificates

Failed attempts (--failure-rate) draw a reason from --failure-reasons FILE,
one reason a line as FTS stores it ("SOURCE [2] Result HTTP 404 : File not
found  after 1 attempts"; blank lines and lines starting with # are
skipped), or from a built-in set of real HTTP, XRootD, SRM and GridFTP
texts. FTS-side retries (--default-retry, or the job's retry) follow FTS's
rules for the reason drawn.`

func newFTSSimCommand(g *Globals) *cobra.Command {
	opts := &FTSSimOptions{}
	cmd := &cobra.Command{
		Use:   "fts-sim",
		Short: "Serve an FTS3 simulator on a port",
		Long:  ftsSimLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runFTSSim(cmd.Context(), opts, g) },
	}
	opts.AddFlags(cmd)
	return cmd
}

func runFTSSim(ctx context.Context, o *FTSSimOptions, g *Globals) error {
	if o.TLSDir == "" && !o.OAuth2 {
		return usagef("without --tls-dir the simulator serves plain HTTP, where only bearer tokens can authenticate: give --oauth2, or --tls-dir for X.509 proxies")
	}
	opts := ftssim.Options{
		Speed: o.Speed, Seed: o.Seed, FailureRate: o.FailureRate, LocalFiles: o.LocalFiles,
		RequireDelegation: o.RequireDelegation, QueueDelay: o.QueueDelay, StartDelay: o.StartDelay,
		TransferTime: o.TransferTime, DefaultRetry: o.DefaultRetry, OAuth2: o.OAuth2,
		CheckDuplicates: o.CheckDuplicates,
	}
	if o.FailureReasons != "" {
		reasons, err := readFailureReasons(o.FailureReasons)
		if err != nil {
			return err
		}
		opts.FailureReasons = reasons
	}
	if o.TLSDir != "" {
		t, err := loadSimTLS(o.TLSDir)
		if err != nil {
			return err
		}
		opts.TLS = t
	}
	srv, err := ftssim.Start(o.Listen, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "fts-sim: serving %s\n", srv.URL)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return fmt.Errorf("fts-sim: stop: %w", err)
	}
	return nil
}

// readFailureReasons reads --failure-reasons; a missing or bad file is a
// usage error that names it.
func readFailureReasons(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--failure-reasons %s: %v", path, err)
	}
	defer f.Close()
	reasons, err := ftssim.ReadFailureReasons(f)
	if err != nil {
		return nil, usagef("--failure-reasons %s: %v", path, err)
	}
	return reasons, nil
}

// loadSimTLS reads the server certificate and the client CAs of --tls-dir.
func loadSimTLS(dir string) (*ftssim.TLSOptions, error) {
	certFile, keyFile := filepath.Join(dir, "hostcert.pem"), filepath.Join(dir, "hostkey.pem")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usagef("--tls-dir %s: server certificate (hostcert.pem, hostkey.pem): %v", dir, err)
	}
	pool, n, err := gridcert.CAPool(dir, "hostcert.pem", "hostkey.pem")
	if err != nil {
		return nil, usagef("--tls-dir %s: %v", dir, err)
	}
	t := &ftssim.TLSOptions{Cert: cert}
	if n > 0 {
		t.ClientCAs = pool
	}
	return t, nil
}
