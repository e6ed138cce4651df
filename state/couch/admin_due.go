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

// DueUsers returns the users with work due at now in one query: the users
// view reduced to one row per user and kind (see state.UserLister). A view
// cannot read the dependencies of a transfer, so a user whose only due
// work is new transfers with dependencies is reported DepsOnly.
func (a *admin) DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error) {
	type row struct {
		user, kind string
		st         kindStats
	}
	viewRows, err := a.db.queryView(ctx, viewsDDoc, viewUsers, map[string]any{"group_level": 2})
	var rows []row
	for _, vr := range viewRows {
		var k []string
		var r row
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
		return nil, fmt.Errorf("couch: due users: %s has no view %s: run aso init to add it: %w", a.db.url, viewUsers, err)
	}
	if err != nil {
		return nil, fmt.Errorf("couch: due users: query view %s of %s: %w", viewUsers, a.db.url, err)
	}
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
	state.SortDue(out)
	return out, nil
}
