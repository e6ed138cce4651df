// Package enqueue reads transfer requests (a JSON array or JSON lines),
// checks each record, and stores the valid ones a batch at a time: what
// `aso enqueue` does. It says what became of every record, naming it by
// its line (and element), and leaves the printing of totals, the progress
// and the logging to its caller.
package enqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// BatchSize is how many requests one Enqueue call of the store gets.
const BatchSize = 1000

// Tally counts what happened to the records.
type Tally struct{ Stored, Queued, Rejected int }

// Warning is a stored record that needs the operator's eye: its
// dependency names no known transfer (DependsOn), or the transfer it
// replaces or supersedes could not record so (Err).
type Warning struct {
	Record    string // where the record is: "line 3", "element 2 (line 4)"
	ID        string
	DependsOn string
	Err       error
}

// Batch collects records and stores them with one Enqueue call per
// BatchSize requests, then reports them in input order on Out.
type Batch struct {
	Store   state.Store
	Sites   *srm.Sites // nil: no check of the PFNs
	User    string     // fills a request without user
	Replace bool       // every request replaces a done owner (--replace)
	Verbose bool       // a line for every record, not only the rejected and the noted
	JSON    bool       // an Outcome a line, for every record
	Out     io.Writer
	// Warn and Progress, when set, hear of warnings and of the tally
	// after each stored batch.
	Warn     func(Warning)
	Progress func(Tally)

	tally    Tally
	enc      *json.Encoder
	lastLine int // the line of the last record read
	recs     []record
	reqs     []state.Request
	at       []int // at[i] is the index in recs of reqs[i]
}

// Tally is what happened to the records so far.
func (b *Batch) Tally() Tally { return b.tally }

// LastLine is the line of the last record read (0: none).
func (b *Batch) LastLine() int { return b.lastLine }

// ReadAll stores every record of in. An input that cannot be parsed
// further (a JSON syntax error inside an array) counts as one rejected
// record after the records before it were stored; one that cannot be
// read is an error. When ctx is cancelled it returns at once, the
// records read before held for Flush.
func (b *Batch) ReadAll(ctx context.Context, in io.Reader) error {
	rr := newRecordReader(in)
	for {
		rec, err := rr.next()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ie *inputError
		switch {
		case errors.Is(err, io.EOF):
			return b.Flush(ctx)
		case errors.As(err, &ie) && !ie.read:
			if err := b.Flush(ctx); err != nil {
				return err
			}
			b.tally.Rejected++
			b.print(&ie.record, "", state.Rejected, ie.err.Error())
			return nil
		case err != nil:
			if ferr := b.Flush(ctx); ferr != nil {
				return ferr
			}
			return fmt.Errorf("enqueue: read the input: %w", err)
		}
		if err := b.add(ctx, rec); err != nil {
			return err
		}
	}
}

// add queues one record, filling an empty user, and flushes when the
// batch is full. (A request given twice in one batch is the store's to
// report as already queued: the conformance suite requires it.)
func (b *Batch) add(ctx context.Context, rec record) error {
	if rec.err == nil && rec.req.User == "" && b.User != "" {
		rec.req.User = b.User
	}
	if rec.err == nil && b.Replace {
		rec.req.Replace = true
	}
	if rec.err == nil && b.Sites != nil {
		rec.err = oneFile(b.Sites, &rec.req)
	}
	if rec.err == nil {
		b.reqs = append(b.reqs, rec.req)
		b.at = append(b.at, len(b.recs))
	}
	b.recs = append(b.recs, rec)
	b.lastLine = rec.line
	if len(b.reqs) >= BatchSize || len(b.recs) >= 4*BatchSize {
		return b.Flush(ctx)
	}
	return nil
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

// Flush stores the queued requests and prints the batch's lines.
func (b *Batch) Flush(ctx context.Context) error {
	results := make([]state.EnqueueResult, len(b.recs))
	if len(b.reqs) > 0 {
		res, err := b.Store.Enqueue(ctx, b.reqs)
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
		rec, res := &b.recs[i], results[i]
		b.report(rec, res)
		if rec.err != nil || res.Status == state.Rejected {
			continue
		}
		for _, d := range rec.req.DependsOn {
			if unknown[d] {
				b.warn(Warning{Record: rec.where(), ID: res.ID, DependsOn: d})
			}
		}
		if res.OwnerErr != nil {
			b.warn(Warning{Record: rec.where(), ID: res.ID, Err: res.OwnerErr})
		}
	}
	b.recs, b.reqs, b.at = b.recs[:0], b.reqs[:0], b.at[:0]
	if b.Progress != nil {
		b.Progress(b.tally)
	}
	return nil
}

func (b *Batch) warn(w Warning) {
	if b.Warn != nil {
		b.Warn(w)
	}
}

// unknownDeps returns the IDs that the requests of the batch depend on and
// that name no stored transfer (one store call for the batch).
func (b *Batch) unknownDeps(ctx context.Context) (map[string]bool, error) {
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
	found, err := b.Store.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("enqueue: look up the transfers depended on: %w", err)
	}
	for i := range found {
		delete(want, found[i].ID)
	}
	return want, nil
}

// report prints the outcome of one record: always when it was rejected or
// met an owner at its destination, with Verbose or JSON otherwise.
func (b *Batch) report(rec *record, res state.EnqueueResult) {
	switch {
	case rec.err != nil:
		b.tally.Rejected++
		b.print(rec, "", state.Rejected, rec.err.Error())
	case res.Status == state.Rejected:
		b.tally.Rejected++
		b.print(rec, res.ID, state.Rejected, validationText(res.Err))
	case res.Status == state.AlreadyQueued:
		b.tally.Queued++
		b.print(rec, res.ID, res.Status, "")
	default:
		b.tally.Stored++
		b.print(rec, res.ID, state.Stored, res.Owner.Note())
	}
}

// Outcome is one line of `aso enqueue --json`.
type Outcome struct {
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
// a rejected record (and, with Verbose, for any record).
func (b *Batch) print(rec *record, id string, status state.EnqueueStatus, why string) {
	if b.JSON {
		if b.enc == nil {
			b.enc = json.NewEncoder(b.Out)
			b.enc.SetEscapeHTML(false)
		}
		o := Outcome{Line: rec.line, ID: id, Status: status, Error: why}
		if status != state.Rejected {
			o.Error, o.Note = "", why
		}
		if rec.index >= 0 {
			o.Element = &rec.index
		}
		_ = b.enc.Encode(o)
		return
	}
	switch {
	case status == state.Rejected:
		fmt.Fprintf(b.Out, "%s: rejected: %s\n", rec.where(), why)
	case why != "": // stored, meeting an owner at its destination
		fmt.Fprintf(b.Out, "%s: %s %s: %s\n", rec.where(), status, id, why)
	case b.Verbose:
		fmt.Fprintf(b.Out, "%s: %s %s\n", rec.where(), status, id)
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
