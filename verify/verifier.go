package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// Inspector reads what is at a URL: srm.Inspector.
type Inspector interface {
	// Check reads the size and, when it is size (or size is 0), the
	// adler32 of the file at url.
	Check(ctx context.Context, url string, size int64) srm.Existing
	// Stat reads its size only.
	Stat(ctx context.Context, url string) srm.Existing
}

// Recorder writes verifications: state.Admin's RecordVerifications.
type Recorder interface {
	RecordVerifications(ctx context.Context, vs []state.Verification) ([]state.Result, error)
}

// Defaults of a Verifier.
const (
	DefaultParallel  = 8
	DefaultBatchSize = 1000
)

// recordTimeout bounds a write of results, which a stop does not cut
// short.
const recordTimeout = time.Minute

// Verifier checks the destinations of transfers. Set Inspector and, unless
// DryRun, Recorder; the rest has defaults.
type Verifier struct {
	Inspector Inspector
	Recorder  Recorder
	// Parallel bounds the transfers checked at once (default
	// DefaultParallel).
	Parallel int
	// BatchSize is how many results one RecordVerifications call writes
	// (default DefaultBatchSize).
	BatchSize int
	// DryRun checks and reports, and writes nothing.
	DryRun bool
	// Destination returns the URL of a transfer's destination when it has
	// no dest_pfn (nil: such a transfer is unreadable).
	Destination func(t *state.Transfer) (string, error)
	// Report is given each outcome once its batch is recorded (or at once
	// in a dry run), from one goroutine, with the totals so far.
	Report func(o Outcome, sofar Totals)
}

// Pages hands every page of the transfers to verify to fn, in order,
// stopping at fn's first error.
type Pages func(fn func([]state.Transfer) error) error

// Run verifies the transfers of pages and returns the totals. The error
// is for what stopped it before the end: a page that could not be read,
// a batch whose write failed as a whole, ctx ending; the totals then
// count what was checked before. Totals.Err says what was found.
func (v *Verifier) Run(ctx context.Context, pages Pages) (Totals, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *state.Transfer)
	found := make(chan Outcome)
	var listErr error
	go func() {
		defer close(work)
		listErr = pages(func(ts []state.Transfer) error {
			for i := range ts {
				select {
				case work <- &ts[i]:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}()
	var wg sync.WaitGroup
	parallel := v.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				found <- v.check(ctx, t)
			}
		}()
	}
	go func() { wg.Wait(); close(found) }()
	var b batcher
	b.v = v
	for o := range found {
		if b.err == nil && !o.stopped {
			b.add(ctx, o)
		}
		if b.err != nil {
			cancel()
		}
	}
	if b.err == nil {
		b.flush(ctx)
	}
	if b.err != nil {
		return b.totals, b.err
	}
	return b.totals, listErr
}

// check verifies one transfer.
func (v *Verifier) check(ctx context.Context, t *state.Transfer) Outcome {
	url := t.DestPFN
	if url == "" {
		var err error
		switch {
		case v.Destination == nil:
			err = errors.New("no destination PFN recorded")
		default:
			url, err = v.Destination(t)
		}
		if err != nil {
			return Outcome{ID: t.ID, User: t.User, Result: state.VerifyUnreadable, Detail: "cannot name the destination: " + err.Error()}
		}
	}
	var e srm.Existing
	if t.Checksum() == "" {
		e = v.Inspector.Stat(ctx, url)
	} else {
		e = v.Inspector.Check(ctx, url, t.Size)
	}
	o := Classify(t, e)
	// a check the stop cut short found nothing about the file
	o.stopped = ctx.Err() != nil
	return o
}

// batcher writes outcomes a batch at a time and reports them.
type batcher struct {
	v       *Verifier
	pending []Outcome
	totals  Totals
	err     error
}

func (b *batcher) add(ctx context.Context, o Outcome) {
	b.pending = append(b.pending, o)
	size := b.v.BatchSize
	if size <= 0 {
		size = DefaultBatchSize
	}
	if len(b.pending) >= size {
		b.flush(ctx)
	}
}

// flush records the pending outcomes in one call and reports them.
func (b *batcher) flush(ctx context.Context) {
	if len(b.pending) == 0 {
		return
	}
	if !b.v.DryRun {
		vs := make([]state.Verification, len(b.pending))
		for i, o := range b.pending {
			vs[i] = state.Verification{ID: o.ID, Result: o.Result, Detail: o.Detail}
		}
		// a result that was read is written even when the run is being
		// stopped: the check cost a storage call
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		res, err := b.v.Recorder.RecordVerifications(wctx, vs)
		cancel()
		if err != nil {
			b.err = fmt.Errorf("record %d verifications: %w", len(vs), err)
			return
		}
		for i := range res {
			if i < len(b.pending) && res[i].Err != nil {
				b.pending[i].NotRecorded = res[i].Err.Error()
			}
		}
	}
	for _, o := range b.pending {
		b.totals.Add(o)
		if b.v.Report != nil {
			b.v.Report(o, b.totals)
		}
	}
	b.pending = b.pending[:0]
}
