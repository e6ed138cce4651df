package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// Get returns one transfer.
func (a *admin) Get(ctx context.Context, id string) (state.Transfer, error) {
	docs, err := a.rv.readKeys(ctx, []string{id})
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
// no other filter) it pages through the queue rows of the work view; with
// an ID prefix it reads the range of _id; for one user otherwise, that
// user's rows of the user view (listUser); only a list of every user's
// transfers queries the "aso-created" index, one request per page of
// f.Limit (see listFind).
func (a *admin) List(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	var docs []json.RawMessage
	var err error
	switch {
	case len(f.IDs) > 0:
		var m map[string]json.RawMessage
		if m, err = a.rv.readKeys(ctx, f.IDs); err == nil {
			for _, id := range f.IDs {
				if raw, ok := m[id]; ok {
					docs = append(docs, raw)
					delete(m, id)
				}
			}
		}
	case f.IDPrefix != "":
		// hex IDs: every ID with the prefix sorts below prefix+"g"
		docs, err = a.db.findAll(ctx, map[string]any{
			"selector": map[string]any{"_id": map[string]any{"$gte": f.IDPrefix, "$lt": f.IDPrefix + "g"}, "type": state.DocType},
		}, 0)
	case f.User != "" && f.Limit == 0 && queueOnly(f.States) && onlyUserAndStates(f):
		// finished transfers (most of a database) are not read at all
		docs, err = a.queueDocs(ctx, f.User)
	case f.User != "":
		var out []state.Transfer
		if out, err = a.listUser(ctx, f); err == nil {
			return out, nil
		}
	default:
		var out []state.Transfer
		if out, err = a.listFind(ctx, f); err == nil {
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
func (a *admin) listFind(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
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
	if f.Verified != "" {
		sel["history"] = map[string]any{"$elemMatch": map[string]any{"verified": f.Verified}}
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
		docs, err := a.db.find(ctx, map[string]any{
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
func (a *admin) queueDocs(ctx context.Context, user string) ([]json.RawMessage, error) {
	const page = 10000
	var docs []json.RawMessage
	var after json.RawMessage
	for {
		rows, err := claimRows(ctx, a.db, user, after, page, true, false)
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
