package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// RmOptions are the flags and arguments of `aso rm`.
type RmOptions struct {
	Timeout   time.Duration
	Proxy     string
	CertDir   string
	BatchSize int
	JSON      bool
	Force     bool
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
	f.BoolVar(&o.Force, "force", false, "delete PFNs that a done transfer names or an active transfer reads or writes, and without reading the state store")
}

func newRmCommand(g *Globals) *cobra.Command {
	o := &RmOptions{}
	cmd := &cobra.Command{
		Use:   "rm PFN...",
		Short: "Delete PFNs with gfal-rm, as the agent deletes failed transfers' destinations",
		Long: "rm deletes each PFN (a URL such as davs://host/path or file:///path) with gfal-rm and\n" +
			"prints one line per PFN: the URL, DELETED, MISSING (no such file: counts as deleted),\n" +
			"FAILED or SKIPPED (not attempted), or REFUSED, and why. Exits 1 if any PFN was not deleted.\n" +
			"First it reads the state store (--state): a PFN that a done transfer names (its source or\n" +
			"its destination), or that an active transfer (new, acquired, submitted) reads or writes, is\n" +
			"REFUSED, naming that transfer (ID, user, state), and not deleted; --force deletes it anyway\n" +
			"and does not read the store. Only PFNs a submission recorded are known to the store.\n" +
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
		d.CertDir = g.getenv("X509_CERT_DIR")
	}
	refused := map[string]string{}
	if !o.Force {
		var err error
		if refused, err = rmRefusals(ctx, g, o.URLs); err != nil {
			return err
		}
	}
	var targets []srm.Target
	for _, u := range o.URLs {
		if refused[u] == "" {
			targets = append(targets, srm.Target{URL: u}) // an operator's own choice: no transfer's source to guard
		}
	}
	var results []srm.DeleteResult
	var batchErr error
	if len(targets) > 0 {
		results, batchErr = d.Delete(ctx, targets)
	}
	results = withRefusals(o.URLs, refused, results)
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
	Status  string `json:"status"` // DELETED, MISSING, FAILED, SKIPPED or REFUSED
	Message string `json:"message,omitempty"`
}

// rmProxy is --proxy, else $X509_USER_PROXY, else the usual proxy file if
// it exists.
func rmProxy(flag string, g *Globals) string {
	if flag != "" {
		return flag
	}
	if p := g.getenv("X509_USER_PROXY"); p != "" {
		return p
	}
	p := fmt.Sprintf("/tmp/x509up_u%d", os.Getuid())
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// rmRefusals reads, in one call, the transfers that recorded urls as
// their PFNs, and returns why each URL that one of them protects is
// refused: a done transfer's source or destination, or an active one's.
// A store that cannot be read is an error that says --force skips it.
func rmRefusals(ctx context.Context, g *Globals, urls []string) (map[string]string, error) {
	refused := map[string]string{}
	err := withStore(ctx, g, "", func(st state.Store) error {
		refs, err := st.PFNRefs(ctx, urls)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if refused[r.PFN] != "" || r.State.Terminal() && r.State != state.StateDone {
				continue // a failed or killed transfer protects nothing
			}
			refused[r.PFN] = fmt.Sprintf("refused: transfer %s (user %s, %s) names it as its %s; --force deletes it anyway",
				r.ID, r.User, r.State, r.Role)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rm: cannot read which transfers name the PFNs (--force deletes without reading them): %w", err)
	}
	return refused, nil
}

// withRefusals is results with a REFUSED result for each of urls that
// refused names, in the order of urls (the deleter's results are in the
// order of the URLs it was given).
func withRefusals(urls []string, refused map[string]string, results []srm.DeleteResult) []srm.DeleteResult {
	if len(refused) == 0 {
		return results
	}
	out := make([]srm.DeleteResult, 0, len(urls))
	for _, u := range urls {
		if why := refused[u]; why != "" {
			out = append(out, srm.DeleteResult{URL: u, Status: srm.StatusRefused, Message: why, Err: errors.New(why)})
			continue
		}
		if len(results) > 0 {
			out = append(out, results[0])
			results = results[1:]
		}
	}
	return out
}
