package couch

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// ActiveTransfersOf returns the submitted transfers of user in the given
// jobs, in the order of jobs, each job's transfers by FTS file ID then ID:
// one request (a POST of the view keys) per maxJobKeys jobs.
func (a *activeReader) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]state.Job, error) {
	byJob := make(map[string][]state.Transfer, len(jobs))
	var keys []any
	for i, j := range jobs {
		if _, ok := byJob[j]; !ok {
			byJob[j] = nil
			keys = append(keys, []string{user, keyActive, j})
		}
		if len(keys) == maxJobKeys || (i == len(jobs)-1 && len(keys) > 0) {
			if err := a.activeOf(ctx, user, keys, byJob); err != nil {
				return nil, fmt.Errorf("couch: active transfers of %s: %w", user, err)
			}
			keys = keys[:0]
		}
	}
	out := []state.Job{}
	for _, j := range jobs {
		ts := byJob[j]
		if len(ts) == 0 {
			continue
		}
		delete(byJob, j)
		state.SortJob(ts)
		out = append(out, state.Job{ID: j, Transfers: ts})
	}
	return out, nil
}

// activeOf reads the submitted transfers of user under keys ([user,
// "active", job]) into byJob.
func (a *activeReader) activeOf(ctx context.Context, user string, keys []any, byJob map[string][]state.Transfer) error {
	add := func(t state.Transfer) {
		if t.State != state.StateSubmitted || t.User != user {
			return
		}
		if _, asked := byJob[t.FTSJob]; asked {
			byJob[t.FTSJob] = append(byJob[t.FTSJob], t)
		}
	}
	if stale := a.staleListing(user); stale || a.written.size() >= minWrittenRead {
		// most of them were probably written by this store: their IDs, then
		// only the documents that changed since; on a stale view, with the
		// IDs of those the store committed itself
		var mine []string
		if stale {
			mine = a.written.idsIn(user, byJob)
		}
		ids, err := a.activeIDs(ctx, keys, stale, mine)
		if err != nil {
			return err
		}
		ts, err := a.readUnchanged(ctx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if t, ok := ts[id]; ok {
				add(t)
			}
		}
		return nil
	}
	rows, err := workRows(ctx, a.db, map[string]any{"keys": keys, "reduce": false, "include_docs": true})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Doc == nil {
			continue
		}
		if t, err := decode(r.Doc); err == nil {
			add(t)
		}
	}
	return nil
}

// readUnchanged returns the transfers of ids as stored: those remembered
// at the server's current revision from memory, the others read (with
// their conflicts resolved, as readKeys does). The revisions are one
// _all_docs request without documents per maxReadKeys IDs.
func (a *activeReader) readUnchanged(ctx context.Context, ids []string) (map[string]state.Transfer, error) {
	out := make(map[string]state.Transfer, len(ids))
	mem := a.written.lookup(ids)
	if len(mem) >= minWrittenRead {
		known := make([]string, 0, len(mem))
		for _, id := range ids {
			if _, ok := mem[id]; ok {
				known = append(known, id)
			}
		}
		revs, err := a.db.revisions(ctx, known)
		if err != nil {
			return nil, err
		}
		for id, t := range mem {
			if revs[id] == t.Rev {
				out[id] = t
			} else {
				a.written.forget(id)
			}
		}
	}
	var read []string
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			read = append(read, id)
		}
	}
	docs, err := a.rv.readKeys(ctx, read)
	if err != nil {
		return nil, err
	}
	for id, raw := range docs {
		if t, err := decode(raw); err == nil {
			out[id] = t
		}
	}
	return out, nil
}

// activeIDs returns the IDs of the rows of the view under keys ([user,
// "active", job]), without documents, then those of extra not among them;
// with stale, from the view as the server last indexed it, less the
// transfers the store wrote out of their job since.
func (a *activeReader) activeIDs(ctx context.Context, keys []any, stale bool, extra []string) ([]string, error) {
	params := map[string]any{"keys": keys, "reduce": false}
	var ended map[string]string
	if stale {
		ended = a.written.endedJobs() // before the read: it may show them
	}
	staleView(params, stale)
	rows, err := workRows(ctx, a.db, params)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(rows)+len(extra))
	seen := make(map[string]bool, len(rows)+len(extra))
	for _, r := range rows {
		if _, gone := ended[r.ID]; gone {
			continue // written out of its job since the view was indexed
		}
		if r.ID != "" && !seen[r.ID] {
			seen[r.ID] = true
			ids = append(ids, r.ID)
		}
	}
	for _, id := range extra {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}
