package couch

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/asyncstageout/aso/state"
)

// listUser is List of the transfers of f.User: for each state f selects,
// the user view's rows of that user and state, in the order of List,
// with their documents, a page of listPage rows per request, each page
// starting after the last key of the one before; a state whose count
// (one grouped read first, when f selects several) is zero is not read.
// With f.Limit, a state's rows are read until f.Limit of them match.
func (a *admin) listUser(ctx context.Context, f state.Filter) ([]state.Transfer, error) {
	states, err := a.userStates(ctx, f)
	if err != nil {
		return nil, err
	}
	out := []state.Transfer{}
	for _, st := range states {
		found, err := a.listUserState(ctx, f, st)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	sort.SliceStable(out, func(i, j int) bool { return state.ListLess(&out[i], &out[j]) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// userStates returns the states of f.User's transfers to read: those f
// selects (every state if none), without those the user has none of.
func (a *admin) userStates(ctx context.Context, f state.Filter) ([]state.State, error) {
	states := f.States
	if len(states) == 0 {
		states = state.States
	}
	if len(states) == 1 {
		return states, nil
	}
	rows, err := a.db.queryView(ctx, viewsDDoc, viewUser, map[string]any{
		"group_level": 2, "startkey": []any{f.User}, "endkey": []any{f.User, map[string]any{}},
	})
	if err != nil {
		return nil, err
	}
	has := map[state.State]bool{}
	for _, r := range rows {
		var k []string
		if json.Unmarshal(r.Key, &k) == nil && len(k) == 2 {
			has[state.State(k[1])] = true
		}
	}
	var out []state.State
	for _, st := range states {
		if has[st] {
			out = append(out, st)
		}
	}
	return out, nil
}

// listUserState reads the rows of f.User in state st (see listUser).
func (a *admin) listUserState(ctx context.Context, f state.Filter, st state.State) ([]state.Transfer, error) {
	var out []state.Transfer
	err := a.eachOfUser(ctx, f.User, st, f.After, func(raw json.RawMessage) bool {
		if t, err := decode(raw); err == nil && f.Matches(&t) {
			out = append(out, t)
		}
		return f.Limit <= 0 || len(out) < f.Limit
	})
	return out, err
}

// eachOfUser calls f with the document of each row of user in state st of
// the user view, in the order of List, after the key after (nil: from the
// first), a page of listPage rows per request, until f returns false.
func (a *admin) eachOfUser(ctx context.Context, user string, st state.State, after *state.ListKey, f func(json.RawMessage) bool) error {
	start := []any{user, st}
	if after != nil {
		start = []any{user, st, after.Created.UnixMicro(), after.ID, map[string]any{}}
	}
	for {
		rows, err := a.db.queryView(ctx, viewsDDoc, viewUser, map[string]any{
			"startkey": start, "endkey": []any{user, st, map[string]any{}},
			"include_docs": true, "reduce": false, "limit": listPage,
		})
		if err != nil {
			return err
		}
		more := true
		for _, r := range rows {
			var k []any
			if json.Unmarshal(r.Key, &k) == nil && len(k) == 4 {
				start = append(k, map[string]any{})
			}
			if r.Doc != nil && more {
				more = f(r.Doc)
			}
		}
		if len(rows) < listPage || !more {
			return nil
		}
	}
}
