package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/srm"
)

// RmOptions are the flags and arguments of `aso rm`.
type RmOptions struct {
	Timeout   time.Duration
	Proxy     string
	CertDir   string
	BatchSize int
	JSON      bool
	URLs      []string
}

// AddFlags registers the flags of `aso rm`.
func (o *RmOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.Timeout, "timeout", srm.DefaultTimeout, "time limit of each gfal-rm process")
	f.StringVar(&o.Proxy, "proxy", "", "X.509 proxy for gfal-rm (default $X509_USER_PROXY, else /tmp/x509up_u<uid> if it exists)")
	f.StringVar(&o.CertDir, "cert-dir", "", "CA certificate directory for gfal-rm (default $X509_CERT_DIR)")
	f.IntVar(&o.BatchSize, "batch-size", srm.DefaultBatchSize, "URLs per gfal-rm process")
	f.BoolVar(&o.JSON, "json", false, "print JSON lines: one {url, status, message} per PFN")
}

func newRmCommand(g *Globals) *cobra.Command {
	o := &RmOptions{}
	cmd := &cobra.Command{
		Use:   "rm PFN...",
		Short: "Delete PFNs with gfal-rm, as the agent deletes failed transfers' destinations",
		Long: "rm deletes each PFN (a URL such as davs://host/path or file:///path) with gfal-rm and\n" +
			"prints one line per PFN: the URL, DELETED, MISSING (no such file: counts as deleted),\n" +
			"FAILED or SKIPPED (not attempted), and why. Exits 1 if any PFN was not deleted.\n" +
			"gfal-rm comes from: " + srm.GfalRmInstallHint(),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { o.URLs = args; return runRm(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runRm(ctx context.Context, o *RmOptions, g *Globals) error {
	d := &srm.Deleter{Timeout: o.Timeout, Proxy: rmProxy(o.Proxy, g), CertDir: o.CertDir, BatchSize: o.BatchSize}
	if d.CertDir == "" {
		d.CertDir = g.Getenv("X509_CERT_DIR")
	}
	targets := make([]srm.Target, len(o.URLs))
	for i, u := range o.URLs {
		targets[i] = srm.Target{URL: u} // an operator's own choice: no transfer's source to guard
	}
	results, batchErr := d.Delete(ctx, targets)
	failed := 0
	out := newJSONLines(g.Stdout)
	for _, r := range results {
		var err error
		if o.JSON {
			err = out.write(RmOutcome{URL: r.URL, Status: r.Status, Message: r.Message})
		} else {
			line := r.URL + "\t" + r.Status
			if r.Message != "" {
				line += "\t" + strings.ReplaceAll(r.Message, "\n", " ")
			}
			_, err = fmt.Fprintln(g.Stdout, line)
		}
		if err != nil {
			return err
		}
		if r.Err != nil {
			failed++
		}
	}
	switch {
	case batchErr != nil:
		return fmt.Errorf("%d of %d not deleted: %w", failed, len(results), batchErr)
	case failed > 0:
		return fmt.Errorf("%d of %d not deleted", failed, len(results))
	}
	return nil
}

// RmOutcome is one line of `aso rm --json`.
type RmOutcome struct {
	URL     string `json:"url"`
	Status  string `json:"status"` // DELETED, MISSING, FAILED or SKIPPED
	Message string `json:"message,omitempty"`
}

// rmProxy is --proxy, else $X509_USER_PROXY, else the usual proxy file if
// it exists.
func rmProxy(flag string, g *Globals) string {
	if flag != "" {
		return flag
	}
	if p := g.Getenv("X509_USER_PROXY"); p != "" {
		return p
	}
	p := fmt.Sprintf("/tmp/x509up_u%d", os.Getuid())
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}
