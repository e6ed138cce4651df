package couch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Purge removes the terminal transfers o selects (see state.Purger): it
// pages through the user view's rows of o.User's finished transfers, or
// for every user through _all_docs, and, every maxBulkDocs selected
// transfers, archives them (synced) and deletes them with one _bulk_docs
// of revision-checked deletions; a transfer that changed since it was read
// conflicts and stays.
func (a *admin) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	var batch []state.Transfer
	removed := 0
	var failed error
	flush := func() {
		if failed != nil || len(batch) == 0 {
			return
		}
		n, err := a.purgeBatch(ctx, batch, o.Archive)
		removed += n
		failed = err
		batch = batch[:0]
		if o.Progress != nil {
			o.Progress(removed)
		}
	}
	err := a.eachPurgeable(ctx, o.User, func(raw json.RawMessage) {
		if _, kind := classify(raw); kind != kindTransfer || failed != nil {
			return
		}
		if t, err := decode(raw); err == nil && o.Purgeable(&t) {
			if batch = append(batch, t); len(batch) == maxBulkDocs {
				flush()
			}
		}
	})
	flush()
	if err == nil {
		err = failed
	}
	if err != nil {
		return removed, fmt.Errorf("couch: purge: %w", err)
	}
	return removed, nil
}

// eachPurgeable calls f with each document that may be purged: of one
// user, the user view's rows of that user's finished transfers; of every
// user, every document of the database.
func (a *admin) eachPurgeable(ctx context.Context, user string, f func(json.RawMessage)) error {
	if user == "" {
		return a.db.scanAll(ctx, f)
	}
	for _, st := range []state.State{state.StateDone, state.StateFailed, state.StateKilled} {
		if err := a.eachOfUser(ctx, user, st, nil, func(raw json.RawMessage) bool { f(raw); return true }); err != nil {
			return err
		}
	}
	return nil
}

// purgeBatch archives ts (when asked) and deletes them.
func (a *admin) purgeBatch(ctx context.Context, ts []state.Transfer, arch state.Archiver) (int, error) {
	if arch != nil {
		state.NotePurged(ts, a.by, a.now())
		if err := arch.Write(ts); err != nil {
			return 0, fmt.Errorf("archive: %w", err)
		}
		if err := arch.Sync(); err != nil {
			return 0, fmt.Errorf("archive: %w", err)
		}
	}
	ids := make([]string, len(ts))
	docs := make([]any, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
		docs[i] = map[string]any{"_id": ts[i].ID, "_rev": ts[i].Rev, "_deleted": true}
	}
	res, _, err := a.db.bulkDocs(ctx, ids, docs) // a deletion short of quorum still spreads
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range res {
		if r.Err == nil {
			n++
		}
	}
	return n, nil
}
