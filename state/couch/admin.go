package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// by names the writer of admin changes in history entries.
func (s *Store) by() string { return s.locks.by }

// Enqueue stores valid requests as new transfers with one _bulk_docs.
func (s *Store) Enqueue(ctx context.Context, reqs []state.Request) ([]state.EnqueueResult, error) {
	now := s.now()
	res := make([]state.EnqueueResult, len(reqs))
	first := map[string]bool{}
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
		t := state.NewTransfer(*r, now, s.by())
		body, err := encode(&t)
		if err != nil {
			res[i].Status, res[i].Err = state.Rejected, err
			continue
		}
		docs = append(docs, body)
		ids = append(ids, t.ID)
		at = append(at, i)
	}
	out, accepted, err := s.db.bulkDocs(ctx, ids, docs)
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
	if err := s.settleEnqueued(ctx, open, out, ids, docs, at, res); err != nil {
		return nil, err
	}
	return res, nil
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
func (s *Store) settleEnqueued(ctx context.Context, ks []int, out []docResult, ids []string, docs []any, at []int, res []state.EnqueueResult) error {
	if len(ks) == 0 {
		return nil
	}
	read := make([]string, len(ks))
	for n, k := range ks {
		read[n] = ids[k]
	}
	stored, err := s.rv.readKeys(ctx, read)
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

// Get returns one transfer.
func (s *Store) Get(ctx context.Context, id string) (state.Transfer, error) {
	docs, err := s.rv.readKeys(ctx, []string{id})
	if err != nil {
		return state.Transfer{}, fmt.Errorf("couch: get %s: %w", id, err)
	}
	raw, ok := docs[id]
	if !ok {
		return state.Transfer{}, fmt.Errorf("couch: get %s: %w", id, state.ErrNotFound)
	}
	t, err := decode(raw)
	if err != nil {
		return state.Transfer{}, fmt.Errorf("couch: get %s: stored document: %w", id, err)
	}
	return t, nil
}

// queueOnly reports whether states name only new and acquired, the states
// whose transfers have a claim_key.
func queueOnly(states []state.State) bool {
	for _, st := range states {
		if st != state.StateNew && st != state.StateAcquired {
			return false
		}
	}
	return len(states) > 0
}

// List returns the transfers matching f, oldest created first. With IDs it
// reads them in one request; for the queue of one user (new and acquired,
// no other filter) it pages through the queue rows of the view; with an ID
// prefix it reads the range of _id; otherwise it queries the "aso-created"
// index, one request per page of f.Limit (see listFind).
func (s *Store) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	var docs []json.RawMessage
	var err error
	switch {
	case len(f.IDs) > 0:
		var m map[string]json.RawMessage
		if m, err = s.rv.readKeys(ctx, f.IDs); err == nil {
			for _, id := range f.IDs {
				if raw, ok := m[id]; ok {
					docs = append(docs, raw)
					delete(m, id)
				}
			}
		}
	case f.IDPrefix != "":
		// hex IDs: every ID with the prefix sorts below prefix+"g"
		docs, err = s.db.findAll(ctx, map[string]any{
			"selector": map[string]any{"_id": map[string]any{"$gte": f.IDPrefix, "$lt": f.IDPrefix + "g"}, "type": state.DocType},
		}, 0)
	case f.User != "" && f.Limit == 0 && queueOnly(f.States) && onlyUserAndStates(f):
		// finished transfers (most of a database) are not read at all
		docs, err = s.queueDocs(ctx, f.User)
	default:
		var out []state.Transfer
		if out, err = s.listFind(ctx, f); err == nil {
			return out, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("couch: list: %w", err)
	}
	out := []state.Transfer{}
	for _, raw := range docs {
		t, err := decode(raw)
		if err == nil && f.Matches(&t) {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return state.ListLess(&out[i], &out[j]) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// onlyUserAndStates reports whether f filters on nothing but user and states.
func onlyUserAndStates(f state.Filter) bool {
	g := f
	g.User, g.States = "", nil
	return reflect.DeepEqual(g, state.Filter{})
}

// listPage bounds the documents one List query returns.
const listPage = 5000

// listFind queries the "aso-created" index in (created, _id) order, each
// request starting after the last document of the one before (keyset
// paging, so a page costs the same anywhere in the database). The selector
// holds every filter except the LFN pattern, checked here; so it takes one
// request per page unless that pattern rejects most of what is read.
func (s *Store) listFind(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	sel := map[string]any{"type": state.DocType, "created": map[string]any{"$gt": nil}}
	if f.User != "" {
		sel["user"] = f.User
	}
	if len(f.States) > 0 {
		sel["state"] = map[string]any{"$in": f.States}
	}
	if src, dst, ok := strings.Cut(f.Link, "->"); ok {
		sel["source"], sel["destination"] = src, dst
	}
	if f.FTSJob != "" {
		sel["fts_job"] = f.FTSJob
	}
	if f.ErrorClass != "" && f.ErrorClass != "unknown" { // unknown: also those without, checked below
		sel["error_class"] = f.ErrorClass
	}
	if !f.Since.IsZero() {
		sel["last_update"] = map[string]any{"$gte": state.At(f.Since)}
	}
	after := f.After
	out := []state.Transfer{}
	for {
		if after != nil {
			sel["created"] = map[string]any{"$gte": after.Created}
			sel["$or"] = []any{map[string]any{"created": map[string]any{"$gt": after.Created}}, map[string]any{"_id": map[string]any{"$gt": after.ID}}}
		}
		n := listPage
		if f.Limit > 0 && f.LFN == "" {
			n = min(n, f.Limit-len(out))
		}
		docs, err := s.db.find(ctx, map[string]any{
			"selector":  sel,
			"sort":      []any{map[string]string{"type": "asc"}, map[string]string{"created": "asc"}},
			"use_index": []string{indexCreated, indexCreated},
			"limit":     n,
		})
		if err != nil {
			return nil, err
		}
		last := after
		for _, raw := range docs {
			t, err := decode(raw)
			if err != nil { // an invalid document: Summary reports it
				var k state.ListKey
				var key struct {
					ID      string     `json:"_id"`
					Created state.Time `json:"created"`
				}
				if json.Unmarshal(raw, &key) == nil {
					k = state.ListKey{Created: key.Created, ID: key.ID}
					after = &k
				}
				continue
			}
			k := state.KeyOf(&t)
			after = &k
			if f.Matches(&t) && (f.Limit <= 0 || len(out) < f.Limit) {
				out = append(out, t)
			}
		}
		if len(docs) < n || (f.Limit > 0 && len(out) >= f.Limit) || after == last {
			sort.SliceStable(out, func(i, j int) bool { return state.ListLess(&out[i], &out[j]) })
			return out, nil
		}
	}
}

// queueDocs returns the documents of user's queue (the queue rows of the
// view).
func (s *Store) queueDocs(ctx context.Context, user string) ([]json.RawMessage, error) {
	const page = 10000
	var docs []json.RawMessage
	var after json.RawMessage
	for {
		rows, err := claimRows(ctx, s.db, user, after, page, true, false)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.Doc != nil {
				docs = append(docs, r.Doc)
			}
			if k, ok := claimKeyOf(r); ok {
				after = k
			}
		}
		if len(rows) < page {
			return docs, nil
		}
	}
}

// Summary counts transfers by state, link and user. It pages through
// _all_docs (an operator's command, not part of the agent's loop), which is
// also how it finds the documents that are not valid transfers.
func (s *Store) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	now := s.now()
	o = o.WithDefaults()
	sum := state.Summary{
		ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
		ByErrorClass: map[string]int{},
		Stale:        []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{},
	}
	// a user's transfers not terminal in the scan are read again by ID, from
	// a quorum: a scan of a cluster reads one copy of each shard, which may
	// not show an agent's last writes yet (its own summary after a run)
	var unsettled []state.Transfer
	err := s.db.scanAll(ctx, func(raw json.RawMessage) {
		_, kind := classify(raw)
		if kind == kindOther {
			return
		}
		if bytes.Contains(raw, []byte(`"_conflicts"`)) && len(conflictsOf(raw)) > 0 {
			if len(pendingConflicts(raw)) > 0 {
				sum.Conflicted++
			} else {
				sum.Superseded++
			}
		}
		t, err := decode(raw)
		if kind == kindUnknown || err != nil {
			sum.Invalid = append(sum.Invalid, invalidDoc(raw, err))
			return
		}
		if o.User != "" && t.User != o.User {
			return
		}
		if o.User != "" && !t.State.Terminal() {
			unsettled = append(unsettled, t) // counted as read by ID, below
			return
		}
		count(&sum, &t, now, o)
	})
	if err == nil {
		err = s.countByID(ctx, &sum, unsettled, now, o)
	}
	if err != nil {
		return state.Summary{}, fmt.Errorf("couch: summary: %w", err)
	}
	byUpdate := func(ts []state.Transfer) {
		sort.Slice(ts, func(i, j int) bool { return waitsLonger(&ts[i], &ts[j]) })
	}
	byUpdate(sum.Stale)
	byUpdate(sum.StuckAcquired)
	sort.Slice(sum.Invalid, func(i, j int) bool { return sum.Invalid[i].ID < sum.Invalid[j].ID })
	if len(sum.Stale) > o.MaxListed {
		sum.Stale = sum.Stale[:o.MaxListed]
	}
	if len(sum.StuckAcquired) > o.MaxListed {
		sum.StuckAcquired = sum.StuckAcquired[:o.MaxListed]
	}
	return sum, nil
}

// countByID counts ts as a read by ID shows them (each as scanned when the
// read does not show it).
func (s *Store) countByID(ctx context.Context, sum *state.Summary, ts []state.Transfer, now time.Time, o state.SummaryOptions) error {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	docs, err := s.db.readKeysAsStored(ctx, ids)
	if err != nil {
		return err
	}
	for i := range ts {
		t := &ts[i]
		if raw, ok := docs[t.ID]; ok {
			if cur, err := decode(raw); err == nil && cur.User == o.User {
				t = &cur
			}
		}
		count(sum, t, now, o)
	}
	return nil
}

func count(sum *state.Summary, t *state.Transfer, now time.Time, o state.SummaryOptions) {
	sum.Total++
	sum.ByState[t.State]++
	bump(sum.ByLink, t.Link(), t.State)
	bump(sum.ByUser, t.User, t.State)
	switch t.State {
	case state.StateFailed:
		sum.ByErrorClass[state.FailureClass(t.ErrorClass)]++
	case state.StateNew:
		if sum.OldestWaiting == nil || waitsLonger(t, sum.OldestWaiting) {
			c := *t
			sum.OldestWaiting = &c
		}
	case state.StateSubmitted:
		if t.LastUpdate.Before(now.Add(-o.StaleAfter)) {
			sum.Stale = append(sum.Stale, *t)
		}
	case state.StateAcquired:
		if !t.LeaseExpires.After(now) {
			sum.StuckAcquired = append(sum.StuckAcquired, *t)
		}
	}
}

func bump(m map[string]map[state.State]int, k string, st state.State) {
	if m[k] == nil {
		m[k] = map[state.State]int{}
	}
	m[k][st]++
}

// waitsLonger orders transfers by how long they have been in their state:
// oldest last_update first, then ID.
func waitsLonger(a, b *state.Transfer) bool {
	if !a.LastUpdate.Equal(b.LastUpdate.Time) {
		return a.LastUpdate.Before(b.LastUpdate.Time)
	}
	return a.ID < b.ID
}

// RequestKill asks for transfers to be killed (one bulk read, one
// _bulk_docs).
func (s *Store) RequestKill(ctx context.Context, ids []string) ([]state.Result, error) {
	now, by := s.now(), s.by()
	return wrap("kill")(s.w.mutate(ctx, idItems(ids, func(t *state.Transfer) error { return state.RequestKillOf(t, now, by) }), reapply))
}

// Retry returns terminal transfers to new (one bulk read, one _bulk_docs).
func (s *Store) Retry(ctx context.Context, ids []string) ([]state.Result, error) {
	now, by := s.now(), s.by()
	return wrap("retry")(s.w.mutate(ctx, idItems(ids, func(t *state.Transfer) error { return state.RetryOf(t, now, by) }), reapply))
}

func idItems(ids []string, f func(t *state.Transfer) error) []item {
	items := make([]item, len(ids))
	for i, id := range ids {
		items[i] = item{id: id, rule: func(t *state.Transfer) (bool, error) { return true, f(t) }}
	}
	return items
}
