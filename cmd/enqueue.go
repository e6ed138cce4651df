package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

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

// enqueueTally counts what happened to the records.
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
	var sites *srm.Sites
	if o.Sites != "" {
		var err error
		if sites, err = srm.LoadSites(o.Sites); err != nil {
			return permanentError{fmt.Errorf("sites file: %w", err)}
		}
	}
	var tally enqueueTally
	err := withStore(ctx, g, g.User, func(st state.Store) error {
		view := newEnqueueView(g, size, typed)
		defer view.close()
		b := &enqueueBatch{g: g, st: st, sites: sites, verbose: o.Verbose, replace: o.Replace, tally: &tally, view: view}
		if o.JSON {
			b.json = newJSONLines(g.Stdout)
		}
		err := b.readAll(ctx, newRecordReader(view.count(interruptible(ctx, in))))
		if stop := stoppedBy(ctx); stop != nil {
			err = b.stop(ctx, stop)
		}
		view.close()
		if !o.JSON {
			fmt.Fprintf(g.Stdout, "%d stored, %d already queued, %d rejected\n", tally.stored, tally.queued, tally.rejected)
		}
		g.Log.WithFields(logrus.Fields{FieldUser: g.User, "stored": tally.stored, "already_queued": tally.queued, "rejected": tally.rejected}).Info("enqueue finished")
		return err
	})
	if err == nil && tally.rejected > 0 {
		return usagef("enqueue: %d record(s) rejected (see above); every other record was stored", tally.rejected)
	}
	return err
}

// oneFile is why r is refused when its source and destination resolve to
// PFNs that may be one file (srm.SameFile), or nil. A site or LFN the sites
// file cannot resolve is left to the agent, which aborts it visibly.
func oneFile(sites *srm.Sites, r *state.Request) error {
	src, err := sites.ResolveFor(r.Source, r.SourceLFN, r.Destination)
	if err != nil {
		return nil
	}
	dst, err := sites.ResolveFor(r.Destination, r.DestinationLFN, r.Destination)
	if err != nil || !srm.SameFile(src, dst) {
		return nil
	}
	return fmt.Errorf("source and destination may be one file (%s at %s is %s, %s at %s is %s): a transfer onto its own source is refused",
		r.SourceLFN, r.Source, src, r.DestinationLFN, r.Destination, dst)
}

// stoppedBy returns the stop signal that cancelled ctx, if one did.
func stoppedBy(ctx context.Context) *stopSignal {
	var s *stopSignal
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// stop ends an enqueue a signal stopped: the records read before it are
// stored (with a context of their own: ctx is cancelled), and the error
// says where the input was left, so that nothing is half done without the
// operator knowing.
func (b *enqueueBatch) stop(ctx context.Context, sig *stopSignal) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := b.flush(ctx); err != nil {
		return fmt.Errorf("enqueue %s, then storing the records read failed: %w", sig, err)
	}
	if b.lastLine == 0 {
		return exitCodeError{sig.code(), fmt.Errorf("enqueue %s before any record was read; nothing was stored", sig)}
	}
	return exitCodeError{sig.code(), fmt.Errorf("enqueue %s: the input was read up to line %d and every record up to there is counted above; nothing after it was read", sig, b.lastLine)}
}

// readAll stores every record of rr. An input that cannot be parsed further
// (a JSON syntax error inside an array) counts as one rejected record after
// the records before it were stored; one that cannot be read is an error.
// A stop signal (ctx cancelled) ends it at once, the records read before
// it held for stop.
func (b *enqueueBatch) readAll(ctx context.Context, rr recordReader) error {
	for {
		rec, err := rr.next()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ie *inputError
		switch {
		case errors.Is(err, io.EOF):
			return b.flush(ctx)
		case errors.As(err, &ie) && !ie.read:
			if err := b.flush(ctx); err != nil {
				return err
			}
			b.tally.rejected++
			b.print(&ie.record, "", state.Rejected, ie.err.Error())
			return nil
		case err != nil:
			if ferr := b.flush(ctx); ferr != nil {
				return ferr
			}
			return fmt.Errorf("enqueue: read the input: %w", err)
		}
		if err := b.add(ctx, rec); err != nil {
			return err
		}
	}
}

// interruptible returns r, read so that a read waiting for input (from a
// terminal, or a pipe whose writer keeps it open) returns as soon as ctx is
// done: the read goes on in a goroutine, which the process's exit ends.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r, res: make(chan readResult, 1)}
}

type readResult struct {
	n   int
	err error
}

// ctxReader is a reader whose reads end when its context does.
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	res     chan readResult
	buf     []byte
	rest    []byte // read but not yet returned
	pending bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if !c.pending {
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		c.pending = true
		go func() {
			n, err := c.r.Read(buf)
			c.res <- readResult{n, err}
		}()
	}
	select {
	case r := <-c.res:
		c.pending = false
		n := copy(p, c.buf[:r.n])
		c.rest = c.buf[n:r.n]
		return n, r.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}

// enqueueBatch collects records and stores them with one Enqueue call per
// adminBatch requests, then reports them in input order.
type enqueueBatch struct {
	g       *Globals
	st      state.Store
	sites   *srm.Sites // nil: no check of the PFNs
	verbose bool
	replace bool      // every request replaces a done owner (--replace)
	json    jsonLines // zero: text
	tally   *enqueueTally
	view    *enqueueView
	// lastLine is the line of the last record read
	lastLine int

	recs []record
	reqs []state.Request
	at   []int // at[i] is the index in recs of reqs[i]
}

// add queues one record, filling an empty user from --user, and flushes
// when the batch is full. (A request given twice in one batch is the store's
// to report as already queued: the conformance suite requires it.)
func (b *enqueueBatch) add(ctx context.Context, rec record) error {
	if rec.err == nil && rec.req.User == "" && b.g.User != "" {
		rec.req.User = b.g.User
	}
	if rec.err == nil && b.replace {
		rec.req.Replace = true
	}
	if rec.err == nil && b.sites != nil {
		rec.err = oneFile(b.sites, &rec.req)
	}
	if rec.err == nil {
		b.reqs = append(b.reqs, rec.req)
		b.at = append(b.at, len(b.recs))
	}
	b.recs = append(b.recs, rec)
	b.lastLine = rec.line
	if len(b.reqs) >= adminBatch || len(b.recs) >= 4*adminBatch {
		return b.flush(ctx)
	}
	return nil
}

// flush stores the queued requests and prints the batch's lines.
func (b *enqueueBatch) flush(ctx context.Context) error {
	results := make([]state.EnqueueResult, len(b.recs))
	if len(b.reqs) > 0 {
		res, err := b.st.Enqueue(ctx, b.reqs)
		if err != nil {
			return fmt.Errorf("enqueue: store records up to line %d: %w", b.recs[len(b.recs)-1].line, err)
		}
		if len(res) != len(b.reqs) {
			return fmt.Errorf("enqueue: the store answered %d results for %d requests", len(res), len(b.reqs))
		}
		for i, r := range res {
			results[b.at[i]] = r
		}
	}
	unknown, err := b.unknownDeps(ctx)
	if err != nil {
		return err
	}
	for i := range b.recs {
		b.report(&b.recs[i], results[i])
		b.warnDeps(&b.recs[i], results[i], unknown)
		if err := results[i].OwnerErr; err != nil {
			b.g.Log.WithFields(logrus.Fields{"record": b.recs[i].where(), FieldTransfer: results[i].ID}).WithError(err).
				Warn("stored, but the transfer it replaces or supersedes could not record so; the stored transfer's own history names it")
		}
	}
	b.recs, b.reqs, b.at = b.recs[:0], b.reqs[:0], b.at[:0]
	b.view.update(*b.tally)
	return nil
}

// unknownDeps returns the IDs that the requests of the batch depend on and
// that name no stored transfer (one store call for the batch).
func (b *enqueueBatch) unknownDeps(ctx context.Context) (map[string]bool, error) {
	want := map[string]bool{}
	for i := range b.reqs {
		for _, d := range b.reqs[i].DependsOn {
			want[d] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	found, err := b.st.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("enqueue: look up the transfers depended on: %w", err)
	}
	for i := range found {
		delete(want, found[i].ID)
	}
	return want, nil
}

// warnDeps warns about a stored record that depends on an unknown
// transfer: it waits until one with that ID is enqueued and done.
func (b *enqueueBatch) warnDeps(rec *record, res state.EnqueueResult, unknown map[string]bool) {
	if rec.err != nil || res.Status == state.Rejected {
		return
	}
	for _, d := range rec.req.DependsOn {
		if unknown[d] {
			b.g.Log.WithFields(logrus.Fields{"record": rec.where(), FieldTransfer: res.ID, "depends_on": d}).
				Warn("depends_on names no known transfer: this one waits until a transfer with that ID is enqueued and done")
		}
	}
}

// report prints the outcome of one record: always when it was rejected, with
// -v or --json otherwise.
func (b *enqueueBatch) report(rec *record, res state.EnqueueResult) {
	switch {
	case rec.err != nil:
		b.tally.rejected++
		b.print(rec, "", state.Rejected, rec.err.Error())
	case res.Status == state.Rejected:
		b.tally.rejected++
		b.print(rec, res.ID, state.Rejected, validationText(res.Err))
	case res.Status == state.AlreadyQueued:
		b.tally.queued++
		b.print(rec, res.ID, res.Status, "")
	default:
		b.tally.stored++
		b.print(rec, res.ID, state.Stored, res.Owner.Note())
	}
}

// EnqueueOutcome is one line of `aso enqueue --json`.
type EnqueueOutcome struct {
	Line    int                 `json:"line"`
	Element *int                `json:"element,omitempty"` // index in a JSON array input
	ID      string              `json:"id,omitempty"`
	Status  state.EnqueueStatus `json:"status"`
	Error   string              `json:"error,omitempty"`
	// Note: what a stored request met at its destination (it waits for
	// the owner, is already there, replaces or supersedes it).
	Note string `json:"note,omitempty"`
}

// print writes the outcome of one record: a JSON line, or a text line for
// a rejected record (and, with -v, for any record).
func (b *enqueueBatch) print(rec *record, id string, status state.EnqueueStatus, why string) {
	if b.json.enc != nil {
		o := EnqueueOutcome{Line: rec.line, ID: id, Status: status, Error: why}
		if status != state.Rejected {
			o.Error, o.Note = "", why
		}
		if rec.index >= 0 {
			o.Element = &rec.index
		}
		_ = b.json.write(o)
		return
	}
	switch {
	case status == state.Rejected:
		fmt.Fprintf(b.g.Stdout, "%s: rejected: %s\n", rec.where(), why)
	case why != "": // stored, meeting an owner at its destination
		fmt.Fprintf(b.g.Stdout, "%s: %s %s: %s\n", rec.where(), status, id, why)
	case b.verbose:
		fmt.Fprintf(b.g.Stdout, "%s: %s %s\n", rec.where(), status, id)
	}
}

// validationText returns the text of the *state.ValidationError inside err
// (field, value and reason), without the wrapping of the backend.
func validationText(err error) string {
	var ve *state.ValidationError
	if errors.As(err, &ve) {
		return ve.Error()
	}
	if err == nil {
		return "rejected by the store"
	}
	return err.Error()
}
