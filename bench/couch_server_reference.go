package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/asyncstageout/aso/state"
)

// reference writes, to a fresh database set up like the agent's, the n
// transfers (not timed, as aso enqueue) and then the four revisions of
// each one's life (claim, submit_sid, commit, terminal: the revisions the
// agent writes when every transfer finishes at the first status query), as
// _bulk_docs batches of batch documents, inFlight requests at a time, and
// returns the time they took.
//
// With one in flight (the sequential reference) the batches go one after
// another, each revision of every transfer before the next, and only the
// time spent in the requests counts. With more, each batch's four
// revisions go in order, the batches side by side, at most inFlight
// requests in flight, and the wall time counts: a batch is encoded while
// the server works on others, as the agent does. On a cluster, batch i
// goes to node i (modulo the nodes).
func (s *couchServer) reference(ctx context.Context, aso string, n, batch, inFlight int) (float64, error) {
	db, err := s.newDB(ctx, aso)
	if err != nil {
		return 0, err
	}
	defer s.dropDB(db)
	now := time.Now()
	ts := referenceTransfers(n, now)
	var parts []refBatch
	for lo := 0; lo < n; lo += batch {
		parts = append(parts, refBatch{s: s, db: db, node: len(parts), ts: ts[lo:min(n, lo+batch)]})
	}
	for i := range parts { // the transfers as enqueued
		if _, err := parts[i].write(ctx, nil, nil); err != nil {
			return 0, fmt.Errorf("insert: %w", err)
		}
	}
	steps := lifeSteps(now)
	if inFlight <= 1 {
		var timed time.Duration
		for _, step := range steps {
			for i := range parts {
				took, err := parts[i].write(ctx, step, nil)
				if err != nil {
					return 0, err
				}
				timed += took
			}
		}
		return timed.Seconds(), nil
	}
	slots := make(chan struct{}, inFlight)
	g, gctx := errgroup.WithContext(ctx)
	t0 := time.Now()
	for i := range parts {
		g.Go(func() error {
			for _, step := range steps {
				if _, err := parts[i].write(gctx, step, slots); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds(), nil
}

// refBatch is one batch of the reference's transfers, with their current
// revisions.
type refBatch struct {
	s    *couchServer
	db   string
	node int
	ts   []state.Transfer
}

// write applies step to every transfer of the batch (nil: none, an
// insert), writes them in one _bulk_docs holding a slot of slots (if not
// nil) for the request, keeps the revisions the server gave, and returns
// the time spent in the request.
func (b *refBatch) write(ctx context.Context, step func(*state.Transfer) error, slots chan struct{}) (time.Duration, error) {
	for i := range b.ts {
		if step != nil {
			if err := step(&b.ts[i]); err != nil {
				return 0, fmt.Errorf("revision of %s: %w", b.ts[i].ID, err)
			}
		}
		b.ts[i].Type = state.DocType
	}
	body, err := json.Marshal(map[string]any{"docs": b.ts})
	if err != nil {
		return 0, err
	}
	if slots != nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	t0 := time.Now()
	rb, err := b.s.doAt(ctx, b.node, http.MethodPost, b.db+"/_bulk_docs", body)
	took := time.Since(t0)
	if slots != nil {
		<-slots
	}
	if err != nil {
		return took, err
	}
	var res []struct{ ID, Rev, Error, Reason string }
	if err := json.Unmarshal(rb, &res); err != nil {
		return took, err
	}
	for i, r := range res {
		if r.Error != "" {
			return took, fmt.Errorf("%s: %s: %s", r.ID, r.Error, r.Reason)
		}
		b.ts[i].Rev = r.Rev
	}
	return took, nil
}
