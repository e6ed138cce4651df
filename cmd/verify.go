package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/verify"
)

// VerifyOptions are the flags of `aso verify`.
type VerifyOptions struct {
	Select   SelectOptions
	JSON     bool
	DryRun   bool
	Sample   string
	Parallel int
	Timeout  time.Duration
	Proxy    string
	CertDir  string
	Sites    string
}

// AddFlags registers the flags of `aso verify`.
func (o *VerifyOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	o.Select.AddFlags(f)
	f.BoolVar(&o.JSON, "json", false, "print JSON lines: one {id, user, url, result, detail, size, adler32, errno} per transfer, then {\"totals\": ...}")
	f.BoolVar(&o.DryRun, "dry-run", false, "check and report, and write nothing into the transfers' histories (what the aso-reader role may run)")
	f.StringVar(&o.Sample, "sample", "", "check a random subset: a share of the selected transfers, such as 5% or 0.05 (default: all)")
	f.IntVar(&o.Parallel, "parallel", verify.DefaultParallel, "transfers checked at once (each runs gfal-stat, then gfal-sum)")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "time limit of each gfal-stat and gfal-sum process")
	f.StringVar(&o.Proxy, "proxy", "", "X.509 proxy for gfal-stat and gfal-sum (default $X509_USER_PROXY, else /tmp/x509up_u<uid> if it exists)")
	f.StringVar(&o.CertDir, "cert-dir", "", "CA certificate directory for gfal-stat and gfal-sum (default $X509_CERT_DIR)")
	f.StringVar(&o.Sites, "sites", "", "sites file, to name the destination of a transfer that has no dest_pfn recorded (optional)")
}

func newVerifyCommand(g *Globals) *cobra.Command {
	o := &VerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify [filters]",
		Short: "Check that the files of done transfers are at their destinations, with their size and adler32",
		Long: "verify reads the size (gfal-stat) and adler32 (gfal-sum) of what is at the destination\n" +
			"of the transfers the filters select (the done ones of --user unless --in-state names\n" +
			"other ended states; the filters of `aso list`), --parallel at a time, each process under\n" +
			"--timeout, and prints each transfer as present, missing (the storage says ENOENT),\n" +
			"differs (another size or checksum, or not a file) or unreadable (any other error, or a\n" +
			"storage without checksums), then the totals. Each result is written into the transfer's\n" +
			"history as one entry that the next verification replaces (aso status ID shows it; aso\n" +
			"list --verified and aso retry --verified select by it), one store call per batch;\n" +
			"--dry-run writes nothing. --sample 5% checks a random 5% of the selection.\n" +
			"Exits 0 when every file checked is present, 1 when one is missing or differs (whatever\n" +
			"else could not be read), 75 when none is missing or differs but one could not be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVerify(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runVerify(ctx context.Context, o *VerifyOptions, g *Globals) error {
	f, sample, err := o.selection(g)
	if err != nil {
		return err
	}
	if o.DryRun {
		g.command = "verify --dry-run" // a reader's credentials do
		ctx = readOnly(ctx)
	}
	dest, err := o.destination()
	if err != nil {
		return err
	}
	var tot verify.Totals
	err = withStore(ctx, g, f.User, func(st state.Store) error {
		pages := func(fn func([]state.Transfer) error) error {
			return admin.Pages(ctx, st, f, 0, func(ts []state.Transfer) error {
				return fn(slices.DeleteFunc(ts, func(t state.Transfer) bool { return !sample.Picks(t.ID) }))
			})
		}
		total := 0
		if err := pages(func(ts []state.Transfer) error { total += len(ts); return nil }); err != nil {
			return err
		}
		view := newOpView(g, "verify", int64(total), transfers, g.Progress)
		defer view.close()
		rep := newVerifyReport(g, o.JSON, view)
		v := &verify.Verifier{Inspector: o.inspector(g), Recorder: st, Parallel: o.Parallel, DryRun: o.DryRun, Destination: dest, Report: rep.line}
		tot, err = v.Run(ctx, pages)
		rep.totals(tot)
		return err
	})
	g.Log.WithFields(logrus.Fields{FieldUser: f.User, "checked": tot.Checked(), "present": tot.Present, "missing": tot.Missing,
		"differs": tot.Differs, "unreadable": tot.Unreadable, "not_recorded": tot.NotRecorded, "dry_run": o.DryRun}).Info("verify finished")
	if err != nil {
		return err
	}
	err = tot.Err()
	if errors.Is(err, verify.ErrUnreadable) {
		return exitCodeError{ExitTempFail, err}
	}
	return err
}

// selection returns the filter of the transfers to verify (done unless
// --in-state names other ended states) and the sample.
func (o *VerifyOptions) selection(g *Globals) (state.Filter, verify.Sample, error) {
	f, err := o.Select.filter(g, time.Now())
	if err != nil {
		return f, verify.Sample{}, err
	}
	if len(f.States) == 0 {
		f.States = []state.State{state.StateDone}
	}
	for _, s := range f.States {
		if !s.Terminal() {
			return f, verify.Sample{}, usagef("--in-state %s: verify checks ended transfers (done, failed, killed): the destination of a %s one is still being written", s, s)
		}
	}
	sample := verify.Sample{Fraction: 1, Seed: rand.Uint64()}
	if o.Sample != "" {
		if sample.Fraction, err = parseShare(o.Sample); err != nil {
			return f, sample, usagef("--sample %q: %v", o.Sample, err)
		}
	}
	return f, sample, nil
}

// parseShare reads a share: "5%" or 0.05, more than 0 and at most all.
func parseShare(s string) (float64, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 1) {
		return 0, errors.New("want a share more than 0 and at most all: a percentage such as 5% or a fraction such as 0.05")
	}
	return v, nil
}

// inspector is the gfal-stat and gfal-sum of the flags.
func (o *VerifyOptions) inspector(g *Globals) *srm.Inspector {
	in := &srm.Inspector{Timeout: o.Timeout, Proxy: rmProxy(o.Proxy, g), CertDir: o.CertDir}
	if in.CertDir == "" {
		in.CertDir = g.getenv("X509_CERT_DIR")
	}
	return in
}

// destination names the destination of a transfer without dest_pfn from
// the sites file, if one is given.
func (o *VerifyOptions) destination() (func(t *state.Transfer) (string, error), error) {
	if o.Sites == "" {
		return nil, nil
	}
	sites, err := srm.LoadSites(o.Sites)
	if err != nil {
		return nil, permanent(fmt.Errorf("sites file: %w", err))
	}
	return func(t *state.Transfer) (string, error) {
		return sites.ResolveFor(t.Destination, t.DestinationLFN, t.Destination)
	}, nil
}
