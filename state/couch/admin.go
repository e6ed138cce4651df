package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// admin makes the calls of the commands: enqueue, kill, retry, purge (its
// writes name by in each history entry), and the reads of lists, the
// summary and the users with work due.
type admin struct {
	db  *db
	rv  *resolver
	w   *writer
	by  string
	now func() time.Time
}

// Enqueue stores valid requests as new transfers with one _bulk_docs, each
// judged by who owns its destination (state.EnqueueOwned; one query of the
// destination view for the batch). The stored requests that replace or
// supersede an owner then record so on it (supersede).
func (a *admin) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	now := a.now()
	refs, err := a.destRefs(ctx, reqs)
	if err != nil {
		return nil, fmt.Errorf("couch: enqueue: read the owners of the destinations: %w", err)
	}
	res := make([]state.EnqueueResult, len(reqs))
	first := map[string]bool{}
	var news []superseding // the requests that replace or supersede an owner, in the batch's order
	var docs []any
	var ids []string
	var at []int
	for i := range reqs {
		r := &reqs[i]
		res[i].ID = r.ID()
		if err := r.Validate(); err != nil {
			res[i].Status, res[i].Err = state.Rejected, err
			continue
		}
		if first[res[i].ID] {
			res[i].Status = state.AlreadyQueued
			continue
		}
		first[res[i].ID] = true
		t, c, err := state.EnqueueOwned(r, refs[state.Destination{Site: r.Destination, LFN: r.DestinationLFN}], now, a.by)
		res[i].Owner = c
		if err != nil {
			res[i].Status, res[i].Err = state.Rejected, err
			continue
		}
		body, err := encode(&t)
		if err != nil {
			res[i].Status, res[i].Err = state.Rejected, err
			continue
		}
		docs = append(docs, body)
		ids = append(ids, t.ID)
		at = append(at, i)
		if c.Supersedes() {
			news = append(news, superseding{i, t})
		}
	}
	out, accepted, err := a.db.bulkDocs(ctx, ids, docs)
	if err != nil {
		return nil, fmt.Errorf("couch: enqueue: %w", err)
	}
	var open []int // writes whose outcome a read settles: answered 202, or refused
	for k, r := range out {
		i := at[k]
		switch {
		case r.Err == nil && accepted[k]:
			open = append(open, k)
		case r.Err == nil:
			res[i].Status = state.Stored
		case errors.Is(r.Err, state.ErrConflict):
			res[i].Status = state.AlreadyQueued
		default:
			res[i].Status = state.Rejected
			res[i].Err = fmt.Errorf("couch: enqueue %s: %w", res[i].ID, r.Err)
			open = append(open, k)
		}
	}
	if err := a.settleEnqueued(ctx, open, out, ids, docs, at, res); err != nil {
		return nil, err
	}
	a.supersede(ctx, news, res, now)
	return res, nil
}

// superseding is a stored request (its transfer t, at index i of the
// batch) that replaces or supersedes the owner of its destination.
type superseding struct {
	i int
	t state.Transfer
}

// supersede records on each owner that a stored request of news replaces
// or supersedes it (state.SupersedeOf): one bulk read and one _bulk_docs
// for the batch, conflicts re-applied. Of two requests of the batch for
// one owner, the first in the batch keeps its record, as on memfile. A
// record that cannot be written is said in its request's result
// (OwnerErr); the request stays stored.
func (a *admin) supersede(ctx context.Context, news []superseding, res []state.EnqueueResult, now time.Time) {
	var items []item
	var at []int
	seen := map[string]bool{}
	for _, n := range news {
		i, t := n.i, n.t
		if res[i].Status != state.Stored || seen[res[i].Owner.Owner.ID] { // the first keeps its record
			continue
		}
		seen[res[i].Owner.Owner.ID] = true
		items = append(items, item{id: res[i].Owner.Owner.ID, rule: func(o *state.Transfer) (bool, error) {
			return state.SupersedeOf(o, &t, now, a.by)
		}})
		at = append(at, i)
	}
	if len(items) == 0 {
		return
	}
	out, err := a.w.mutate(ctx, items, reapply)
	for k, i := range at {
		switch {
		case err != nil:
			res[i].OwnerErr = fmt.Errorf("couch: record on %s that %s supersedes it: %w", items[k].id, res[i].ID, err)
		case out[k].Err != nil:
			res[i].OwnerErr = fmt.Errorf("couch: record on %s that %s supersedes it: %w", items[k].id, res[i].ID, out[k].Err)
		}
	}
}

// destRefs reads the transfers that name the destinations of the valid
// requests of reqs: one query of the destination view.
func (a *admin) destRefs(ctx context.Context, reqs []state.Request) (map[state.Destination][]state.DestRef, error) {
	var dests []state.Destination
	for i := range reqs {
		if reqs[i].Validate() == nil {
			dests = append(dests, state.Destination{Site: reqs[i].Destination, LFN: reqs[i].DestinationLFN})
		}
	}
	if len(dests) == 0 {
		return nil, nil
	}
	return destReader{db: a.db}.DestinationRefs(ctx, dests)
}

// settleEnqueued reads back, in one request, the new documents whose write
// left its outcome open (ks index out, ids and docs; at maps them to res):
//   - one a cluster answered 202 (stored on fewer replicas than its write
//     quorum, which may never spread if those replicas fail); the read,
//     from a quorum, also repairs the replicas that lack it. Found as
//     written, it is stored; found otherwise, another producer stored the
//     same request first; not found, it is reported not stored, so that it
//     is enqueued again instead of being lost in silence;
//   - one refused: a server may validate a new document against an
//     existing one before it reports the conflict (the PouchDB server
//     does), so a refused request whose ID is stored is already queued.
func (a *admin) settleEnqueued(ctx context.Context, ks []int, out []docResult, ids []string, docs []any, at []int, res []state.EnqueueResult) error {
	if len(ks) == 0 {
		return nil
	}
	read := make([]string, len(ks))
	for n, k := range ks {
		read[n] = ids[k]
	}
	stored, err := a.rv.readKeys(ctx, read)
	if err != nil {
		return fmt.Errorf("couch: enqueue: read back the writes answered 202 or refused: %w", err)
	}
	for _, k := range ks {
		i := at[k]
		raw, ok := stored[ids[k]]
		body, _ := docs[k].(json.RawMessage)
		switch {
		case out[k].Err != nil:
			if ok {
				res[i].Status, res[i].Err = state.AlreadyQueued, nil
			}
		case ok && sameContent(raw, body):
			res[i].Status = state.Stored
		case ok:
			res[i].Status = state.AlreadyQueued
		default:
			res[i].Status = state.Rejected
			res[i].Err = fmt.Errorf("couch: enqueue %s: the cluster accepted the write on fewer replicas than its quorum (202) and a read does not find it: enqueue the request again", ids[k])
		}
	}
	return nil
}

// RequestKill asks for transfers to be killed (one bulk read, one
// _bulk_docs).
func (a *admin) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	now, by := a.now(), a.by
	return wrap("kill")(a.w.mutate(ctx, idItems(ids, func(t *state.Transfer) error { return state.RequestKillOf(t, now, by) }), reapply))
}

// Retry returns terminal transfers to new (one bulk read, one _bulk_docs).
func (a *admin) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	now, by := a.now(), a.by
	return wrap("retry")(a.w.mutate(ctx, idItems(ids, func(t *state.Transfer) error { return state.RetryOf(t, now, by) }), reapply))
}

// RecordVerifications writes verifications into their transfers'
// histories (one bulk read, one _bulk_docs).
func (a *admin) RecordVerifications(ctx context.Context, vs []state.Verification) ([]state.Result, error) {
	now, by := a.now(), a.by
	items := make([]item, len(vs))
	for i := range vs {
		v := vs[i]
		items[i] = item{id: v.ID, rule: func(t *state.Transfer) (bool, error) { return true, state.VerifyOf(t, v, now, by) }}
	}
	return wrap("record verifications")(a.w.mutate(ctx, items, reapply))
}

func idItems(ids []string, f func(t *state.Transfer) error) []item {
	items := make([]item, len(ids))
	for i, id := range ids {
		items[i] = item{id: id, rule: func(t *state.Transfer) (bool, error) { return true, f(t) }}
	}
	return items
}
