package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/asyncstageout/aso/enqueue"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// EnqueueOptions are the flags of `aso enqueue`.
type EnqueueOptions struct {
	File    string
	Sites   string
	Verbose bool
	JSON    bool
	Replace bool
}

// AddFlags registers the flags of `aso enqueue`.
func (o *EnqueueOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.File, "file", "f", "-", "file of requests: a JSON array or JSON lines; - is standard input")
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "print a line for every stored or already queued request too")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON lines: one {line, element, id, status, error} per record, every record")
	cmd.Flags().BoolVar(&o.Replace, "replace", false, "every request replaces a done transfer that delivered another file to its destination (as \"replace\": true in the request); without it such a request is rejected, naming that transfer")
	cmd.Flags().StringVar(&o.Sites, "sites", "", "sites file: reject a request whose source and destination PFNs may be one file (without it, the agent refuses such a transfer when it would submit it)")
}

func newEnqueueCommand(g *Globals) *cobra.Command {
	o := &EnqueueOptions{}
	cmd := &cobra.Command{
		Use:   "enqueue [-f FILE|-]",
		Short: "Add transfer requests from a JSON array or JSON lines file (default standard input)",
		Long: "enqueue reads transfer requests, one JSON object each, as a JSON array or as JSON lines,\n" +
			"and stores the valid ones as new transfers. Fields: user, group, role, source, destination,\n" +
			"source_lfn, destination_lfn, size, checksums {\"adler32\": \"...\"}, priority, depends_on,\n" +
			"activity, replace (see below).\n" +
			"A request without user takes --user (or ASO_USER, or the configuration file) when given;\n" +
			"otherwise it is rejected. Enqueueing the same request again is harmless (already queued).\n\n" +
			"With a sites file (--sites, ASO_SITES or the configuration file's sites), a request whose\n" +
			"source and destination resolve to PFNs that may be one file (through a symbolic link, a hard\n" +
			"link, another protocol of one storage) is rejected; without one it is stored, and the agent\n" +
			"fails it as same_file before it is ever submitted.\n\n" +
			"A destination (site and LFN) has one owner: a request for one that a done transfer\n" +
			"delivered another file to is rejected, naming it, unless it says \"replace\": true (or\n" +
			"--replace is given); one for the same file is stored as already there; one whose owner is\n" +
			"still active is stored and waits for it; one whose owner failed or was killed supersedes it.\n" +
			"Each such request's line says so.\n\n" +
			"Every rejected record is printed with its line (in an array also its element index, from 0)\n" +
			"and the reason; the valid records are stored all the same, and aso exits 64.\n" +
			"The input is streamed: its size is not limited by memory.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEnqueue(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

// enqueueTally counts what happened to the records, for the progress view.
type enqueueTally struct{ stored, queued, rejected int }

func runEnqueue(ctx context.Context, o *EnqueueOptions, g *Globals) error {
	in, size, typed := g.stdin(), int64(0), false
	if o.File != "-" && o.File != "" {
		f, err := os.Open(o.File)
		if err != nil {
			return usagef("enqueue: %v", err)
		}
		defer f.Close()
		in = f
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	} else if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(g.Stderr, "aso: reading requests from the terminal; end with Ctrl-D")
		typed = true // no live display under what is typed
	}
	b := &enqueue.Batch{User: g.User, Replace: o.Replace, Verbose: o.Verbose, JSON: o.JSON, Out: g.Stdout, Warn: func(w enqueue.Warning) {
		l := g.Log.WithFields(logrus.Fields{"record": w.Record, FieldTransfer: w.ID})
		if w.Err != nil {
			l.WithError(w.Err).Warn("stored, but the transfer it replaces or supersedes could not record so; the stored transfer's own history names it")
			return
		}
		l.WithField("depends_on", w.DependsOn).Warn("depends_on names no known transfer: this one waits until a transfer with that ID is enqueued and done")
	}}
	if o.Sites != "" {
		var err error
		if b.Sites, err = srm.LoadSites(o.Sites); err != nil {
			return permanentError{fmt.Errorf("sites file: %w", err)}
		}
	}
	err := withStore(ctx, g, g.User, func(st state.Store) error {
		view := newEnqueueView(g, size, typed)
		defer view.close()
		b.Store = st
		b.Progress = func(t enqueue.Tally) { view.update(enqueueTally{t.Stored, t.Queued, t.Rejected}) }
		err := b.ReadAll(ctx, view.count(enqueue.Interruptible(ctx, in)))
		if stop := stoppedBy(ctx); stop != nil {
			err = enqueueStopped(ctx, b, stop)
		}
		view.close()
		t := b.Tally()
		if !o.JSON {
			fmt.Fprintf(g.Stdout, "%d stored, %d already queued, %d rejected\n", t.Stored, t.Queued, t.Rejected)
		}
		g.Log.WithFields(logrus.Fields{FieldUser: g.User, "stored": t.Stored, "already_queued": t.Queued, "rejected": t.Rejected}).Info("enqueue finished")
		return err
	})
	if n := b.Tally().Rejected; err == nil && n > 0 {
		return usagef("enqueue: %d record(s) rejected (see above); every other record was stored", n)
	}
	return err
}

// stoppedBy returns the stop signal that cancelled ctx, if one did.
func stoppedBy(ctx context.Context) *stopSignal {
	var s *stopSignal
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// enqueueStopped ends an enqueue a signal stopped: the records read before
// it are stored (with a context of their own: ctx is cancelled), and the
// error says where the input was left, so that nothing is half done
// without the operator knowing.
func enqueueStopped(ctx context.Context, b *enqueue.Batch, sig *stopSignal) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		return fmt.Errorf("enqueue %s, then storing the records read failed: %w", sig, err)
	}
	if b.LastLine() == 0 {
		return exitCodeError{sig.code(), fmt.Errorf("enqueue %s before any record was read; nothing was stored", sig)}
	}
	return exitCodeError{sig.code(), fmt.Errorf("enqueue %s: the input was read up to line %d and every record up to there is counted above; nothing after it was read", sig, b.LastLine())}
}

// EnqueueOutcome is one line of `aso enqueue --json`.
type EnqueueOutcome = enqueue.Outcome
