package couch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// TakeBack expires the claims of l.User's other agents (see
// state.Recoverer): it checks the lock document, pages through the queue
// rows of the user (without documents) for those under a live lease or
// cool-off, reads them in one bulk read and writes those taken back with
// one _bulk_docs (revision-checked: a transfer that changed meanwhile is
// judged again on its new version).
func (c *claimer) TakeBack(ctx context.Context, l state.Lock) ([]state.Transfer, error) {
	now := c.now()
	d, _, ok, err := c.locks.read(ctx, l.User)
	if err != nil {
		return nil, fmt.Errorf("couch: take back claims of %s: %w", l.User, err)
	}
	var held *state.LockDoc
	if ok {
		held = &d
	}
	if err := state.LockLive(held, l, now); err != nil {
		return nil, fmt.Errorf("couch: take back claims: %w", err)
	}
	const page = 10000
	var ids []string
	var after json.RawMessage
	for {
		rows, err := claimRows(ctx, c.db, l.User, after, page, false, false)
		if err != nil {
			return nil, fmt.Errorf("couch: take back claims of %s: %w", l.User, err)
		}
		for _, r := range rows {
			if k, ok := claimKeyOf(r); ok {
				after = k
				if !due(r.Value, now) {
					ids = append(ids, r.ID)
				}
			}
		}
		if len(rows) < page {
			break
		}
	}
	docs, err := c.rv.readKeys(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("couch: take back claims of %s: %w", l.User, err)
	}
	// the version each item was last written as (a re-read after a
	// conflict applies the rule again, and may find nothing to take back),
	// by item: the rules of one call may run at once (mutate)
	var last []*state.Transfer
	var items []item
	for _, id := range ids {
		raw, ok := docs[id]
		if !ok {
			continue
		}
		t, err := decode(raw)
		if err != nil || !state.TakeBackClaim(cloneTransfer(&t), l, now) {
			continue
		}
		k := len(items)
		last = append(last, nil)
		items = append(items, item{id: id, t: &t, rule: func(t *state.Transfer) (bool, error) {
			took := state.TakeBackClaim(t, l, now)
			if last[k] = nil; took {
				last[k] = cloneTransfer(t)
			}
			return took, nil
		}})
	}
	if len(items) == 0 {
		return nil, nil
	}
	res, err := c.w.mutate(ctx, items, reapply)
	if err != nil {
		return nil, fmt.Errorf("couch: take back claims of %s: %w", l.User, err)
	}
	var out []state.Transfer
	for k, r := range res {
		if t := last[k]; r.Err == nil && t != nil {
			t.Rev = r.Rev
			out = append(out, *t)
		}
	}
	return out, nil
}
