package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/go-kivik/kivik/v4"
)

// kindRow is one row of the users view reduced at group_level 2: one user
// and kind.
type kindRow struct {
	user, kind string
	st         kindStats
}

// DueUsers returns the users with work due at now in one query: the users
// view reduced to one row per user and kind (see state.UserLister). A view
// cannot read the dependencies of a transfer, so a user whose only due
// work is new transfers with dependencies is reported DepsOnly.
func (a *admin) DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error) {
	rows, err := a.kindRows(ctx, map[string]any{"group_level": 2})
	if err != nil {
		return nil, fmt.Errorf("couch: due users: %w", err)
	}
	out := dueOf(rows, now)
	state.SortDue(out)
	return out, nil
}

// UserWork reads the rows of user in the users view, reduced by kind: one
// request, whose answer holds at most a row per kind.
func (a *admin) UserWork(ctx context.Context, user string, now time.Time) (state.UserWork, error) {
	rows, err := a.kindRows(ctx, map[string]any{"group_level": 2, "startkey": []any{user}, "endkey": []any{user, map[string]any{}}})
	if err != nil {
		return state.UserWork{}, fmt.Errorf("couch: work of user %s: %w", user, err)
	}
	w := state.UserWork{User: user, ByState: map[state.State]int{}}
	for _, r := range rows {
		if r.user != user {
			continue
		}
		if st, ok := kindState[r.kind]; ok {
			w.ByState[st] += r.st.Count
		}
		if r.kind == kindLock && r.st.Max > float64(now.UnixMicro()) {
			w.LockedUntil = time.UnixMicro(int64(r.st.Max)).UTC()
		}
	}
	if due := dueOf(rows, now); len(due) == 1 && due[0].User == user {
		w.Due = &due[0]
	}
	return w, nil
}

// kindState is the state of the transfers of each kind of the users view.
var kindState = map[string]state.State{
	kindNew: state.StateNew, kindDeps: state.StateNew, kindAcquired: state.StateAcquired, kindActive: state.StateSubmitted,
	string(state.StateDone): state.StateDone, string(state.StateFailed): state.StateFailed, string(state.StateKilled): state.StateKilled,
}

// kindRows reads the users view with params (reduced).
func (a *admin) kindRows(ctx context.Context, params map[string]any) ([]kindRow, error) {
	viewRows, err := a.db.queryView(ctx, viewsDDoc, viewUsers, params)
	var rows []kindRow
	for _, vr := range viewRows {
		var k []string
		var r kindRow
		if json.Unmarshal(vr.Key, &k) != nil || len(k) != 2 {
			continue // not a row of this view's shape
		}
		if err == nil {
			err = json.Unmarshal(vr.Value, &r.st)
		}
		r.user, r.kind = k[0], k[1]
		rows = append(rows, r)
	}
	if kivik.HTTPStatus(err) == http.StatusNotFound {
		return nil, fmt.Errorf("%s has no view %s: run aso init to add it: %w", a.db.url, viewUsers, err)
	}
	if err != nil {
		return nil, fmt.Errorf("query view %s of %s: %w", viewUsers, a.db.url, err)
	}
	return rows, nil
}

// dueOf returns the users of rows with work due at now, in the order of
// rows.
func dueOf(rows []kindRow, now time.Time) []state.UserDue {
	nowUS := float64(now.UnixMicro())
	byUser := map[string]*state.UserDue{}
	since := map[string]float64{}
	deps := map[string]float64{}
	var order []string
	for _, r := range rows {
		u := byUser[r.user]
		if u == nil {
			u = &state.UserDue{User: r.user}
			byUser[r.user], since[r.user], deps[r.user] = u, math.Inf(1), math.Inf(1)
			order = append(order, r.user)
		}
		switch r.kind {
		case kindLock:
			if r.st.Max > nowUS {
				u.LockedUntil = time.UnixMicro(int64(r.st.Max)).UTC()
			}
		case kindActive:
			u.Active += r.st.Count
			since[r.user] = math.Min(since[r.user], r.st.Min)
		case kindNew, kindAcquired, kindDeps:
			u.Queued += r.st.Count
			if r.st.Min > nowUS {
				break // none of them is due
			}
			if r.kind == kindDeps {
				deps[r.user] = math.Min(deps[r.user], r.st.Min)
			} else {
				since[r.user] = math.Min(since[r.user], r.st.Min)
			}
		}
	}
	var out []state.UserDue
	for _, name := range order {
		u, t := byUser[name], since[name]
		if math.IsInf(t, 1) {
			t, u.DepsOnly = deps[name], true
		} else {
			t = math.Min(t, deps[name])
		}
		if math.IsInf(t, 1) {
			continue // nothing due
		}
		u.Since = time.UnixMicro(int64(t)).UTC()
		out = append(out, *u)
	}
	return out
}
