package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/asyncstageout/aso/state"
)

// writer makes the revision-checked writes of transfers: each item's rule
// (a function of package state) applied to the version read, one
// _bulk_docs per round, the conflicts re-read and judged again within
// conflictTries rounds, a 202 counted only once a read-back confirms it.
// It notes every confirmed write in written.
type writer struct {
	db      *db
	rv      *resolver
	written *written
	now     func() time.Time
}

// rule changes a transfer in memory. It returns false (and no error) when
// the transfer is already as wanted and nothing must be written. Rules are
// the pure functions of package state, so a re-read document is judged by
// the same checks as the first one.
type rule func(t *state.Transfer) (bool, error)

// onConflict says what mutate does with an item whose write lost a race.
type onConflict int

const (
	// reapply re-reads the document and applies the rule again, within
	// conflictTries rounds.
	reapply onConflict = iota
	// report re-reads the document and returns the rule's verdict on it
	// (ErrLeaseLost, ...) or ErrConflict, without writing again.
	report
)

// item is one transfer to change. With t nil the document is read first
// (one bulk read for all such items).
type item struct {
	id   string
	t    *state.Transfer
	rule rule
}

type pending struct {
	idx  int
	base state.Transfer  // the version the rule is applied to (its Rev is sent)
	body json.RawMessage // the last body written
	// wrote is the version last written (or, when the rule needed no
	// write, the version read): its state and lease go into the result.
	wrote *state.Transfer
	// forbidden is the server's refusal of the last write (other than a
	// conflict). A server may run validate_doc_update against the newest
	// revision before it checks the revision sent (the PouchDB server
	// does), so a refusal is trusted only once a re-read shows the
	// revision did not move.
	forbidden error
}

func (p *pending) forbiddenErr() error {
	return fmt.Errorf("couch: transfer %s: the server rejected the write: %w", p.base.ID, p.forbidden)
}

var errConflictsLeft = errors.New("conflicts left")

// mutate applies each item's rule and writes the changed documents with one
// _bulk_docs per round, maxBulkDocs items at a time. Up to partsInFlight
// such parts go at once (eachPart), so that the server has the next part to work on
// while the agent encodes the one after it and decodes the answers (only
// their encoded bodies are held at once); each part's results keep their
// items' order. Per-item errors go into the results; the error return is
// for failures of the whole call: the parts after a failed one are not
// sent, those already under way finish.
func (w *writer) mutate(ctx context.Context, items []item, mode onConflict) ([]state.Result, error) {
	if len(items) <= maxBulkDocs {
		return w.mutateOnce(ctx, items, mode)
	}
	parts := make([][]state.Result, numParts(len(items), maxBulkDocs))
	err := eachPart(len(items), maxBulkDocs, func(k, lo, hi int) error {
		var err error
		parts[k], err = w.mutateOnce(ctx, items[lo:hi], mode)
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

// mutateOnce is mutate of at most maxBulkDocs items.
func (w *writer) mutateOnce(ctx context.Context, items []item, mode onConflict) ([]state.Result, error) {
	res := make([]state.Result, len(items))
	var work []*pending
	var toRead []int
	for i, it := range items {
		res[i].ID = it.id
		if it.t == nil {
			toRead = append(toRead, i)
			continue
		}
		work = append(work, &pending{idx: i, base: *it.t})
	}
	if len(toRead) > 0 {
		read, err := w.reload(ctx, items, toRead, res)
		if err != nil {
			return nil, err
		}
		work = append(work, read...)
	}
	op := func() error {
		var err error
		work, err = w.writeRound(ctx, items, work, res)
		if err != nil {
			return backoff.Permanent(err)
		}
		if len(work) == 0 {
			return nil
		}
		work, err = w.reloadAfterConflict(ctx, items, work, res)
		if err != nil {
			return backoff.Permanent(err)
		}
		if mode == report {
			for _, p := range work {
				if _, err := items[p.idx].rule(cloneTransfer(&p.base)); err != nil {
					res[p.idx].Err = err
				} else {
					res[p.idx].Err = fmt.Errorf("couch: transfer %s changed since it was read: %w", p.base.ID, state.ErrConflict)
				}
			}
			work = nil
			return nil
		}
		if len(work) > 0 {
			return errConflictsLeft
		}
		return nil
	}
	err := retries(ctx, conflictTries, op)
	if errors.Is(err, errConflictsLeft) {
		for _, p := range work {
			res[p.idx].Err = fmt.Errorf("couch: transfer %s: still conflicting after %d rounds: %w", p.base.ID, conflictTries, state.ErrConflict)
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// writeRound applies the rules to work and writes the changes in one
// request. It returns the items that conflicted.
func (w *writer) writeRound(ctx context.Context, items []item, work []*pending, res []state.Result) ([]*pending, error) {
	var docs []any
	var ids []string
	var sent []*pending
	for _, p := range work {
		t := cloneTransfer(&p.base)
		write, err := items[p.idx].rule(t)
		switch {
		case err != nil:
			res[p.idx].Err = err
		case !write:
			res[p.idx] = state.Wrote(p.base.ID, p.base.Rev, t)
		default:
			p.wrote = t
			t.Rev = p.base.Rev
			body, err := encode(t)
			if err != nil {
				res[p.idx].Err = err
				continue
			}
			p.body = body
			docs = append(docs, body)
			ids = append(ids, t.ID)
			sent = append(sent, p)
		}
	}
	out, accepted, err := w.db.bulkDocs(ctx, ids, docs)
	if err != nil {
		return nil, err
	}
	var conflicted []*pending
	for k, r := range out {
		p := sent[k]
		p.forbidden = nil
		switch {
		case r.Err == nil && accepted[k]:
			w.written.forget(p.wrote.ID)
			// 202: stored, but not yet on a quorum of replicas; it counts
			// once a re-read (with conflicts, from a quorum) shows it as
			// the document's only leaf
			conflicted = append(conflicted, p)
		case r.Err == nil:
			res[p.idx] = state.Wrote(res[p.idx].ID, r.Rev, p.wrote)
			w.written.note(p.wrote, &p.base, r.Rev, w.now())
		case errors.Is(r.Err, state.ErrConflict):
			conflicted = append(conflicted, p)
		default:
			// a refusal (state.ErrInvalid) is trusted once the re-read
			// shows that the revision did not move
			p.forbidden = r.Err
			conflicted = append(conflicted, p)
		}
	}
	return conflicted, nil
}

// reload reads the documents of items[idx] and returns them as work; items
// that are missing or invalid get their error in res.
func (w *writer) reload(ctx context.Context, items []item, idx []int, res []state.Result) ([]*pending, error) {
	work := make([]*pending, len(idx))
	for k, i := range idx {
		work[k] = &pending{idx: i}
	}
	return w.reloadAfterConflict(ctx, items, work, res)
}

// reloadAfterConflict re-reads the documents of work in one request. An
// item whose stored document equals the body last written (the write was
// applied but its answer lost) succeeds with the stored revision; one whose
// write was refused while its revision did not move fails with ErrInvalid.
func (w *writer) reloadAfterConflict(ctx context.Context, items []item, work []*pending, res []state.Result) ([]*pending, error) {
	ids := make([]string, len(work))
	for k, p := range work {
		ids[k] = items[p.idx].id
	}
	docs, err := w.rv.readKeys(ctx, ids)
	if err != nil {
		return nil, err
	}
	var next []*pending
	for _, p := range work {
		i := p.idx
		raw, ok := docs[items[i].id]
		if !ok {
			res[i].Err = fmt.Errorf("couch: transfer %s: %w", items[i].id, state.ErrNotFound)
			continue
		}
		var e struct {
			Rev string `json:"_rev"`
		}
		_ = json.Unmarshal(raw, &e)
		switch {
		case p.body != nil && sameContent(raw, p.body):
			res[i] = state.Wrote(res[i].ID, e.Rev, p.wrote)
			w.written.note(p.wrote, &p.base, e.Rev, w.now())
			continue
		case p.forbidden != nil && e.Rev == p.base.Rev:
			res[i].Err = p.forbiddenErr()
			continue
		}
		t, err := decode(raw)
		if err != nil {
			res[i].Err = fmt.Errorf("couch: transfer %s: stored document: %w", items[i].id, err)
			continue
		}
		next = append(next, &pending{idx: i, base: t})
	}
	return next, nil
}

// cloneTransfer copies t deeply enough that rules may change the copy.
func cloneTransfer(t *state.Transfer) *state.Transfer {
	c := *t
	c.History = slices.Clone(t.History)
	c.DependsOn = slices.Clone(t.DependsOn)
	if t.Progress != nil {
		p := *t.Progress
		c.Progress = &p
	}
	return &c
}
