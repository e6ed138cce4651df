package couch

import (
	"context"
	"encoding/json"

	"github.com/asyncstageout/aso/state"
)

// The summary of one user reads views keyed by the user, never the rest of
// the database: the user's finished transfers as counted by the counts
// view, its unfinished ones by ID (from a read quorum, so that an agent's
// own summary after a run shows its last writes on a cluster), their IDs
// from the work view, and its conflicted documents from the conflicts
// view. Documents that are not valid transfers have no user to key them
// by: only the summary of every user lists them.

// groupKey is a group of the counts view without its user and reason.
type groupKey struct {
	state       state.State
	link, class string
}

// userSummary is Summary of user.
func (a *admin) userSummary(ctx context.Context, user string, sum *state.Summarizer) error {
	newest, err := a.countFinished(ctx, user, sum)
	if err != nil {
		return err
	}
	rows, err := workRows(ctx, a.db, map[string]any{"startkey": []any{user}, "endkey": []any{user, map[string]any{}}, "reduce": false})
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	docs, err := a.db.readKeysAsStored(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		t, err := decode(docs[id])
		if err != nil || t.User != user {
			continue // gone since, or not a transfer of the user any more
		}
		if k := state.CountKeyOf(&t); t.State.Terminal() && float64(t.LastUpdate.UnixMicro()) <= newest[groupKey{k.State, k.Link, k.ErrorClass}] {
			continue // finished since the work view's answer, and counted by the counts view's
		}
		sum.Add(&t)
	}
	return a.userConflicts(ctx, user, sum)
}

// countFinished counts the finished transfers of user from the counts
// view (one row per state, link and error class), and returns the newest
// last_update of each group in microseconds.
func (a *admin) countFinished(ctx context.Context, user string, sum *state.Summarizer) (map[groupKey]float64, error) {
	rows, err := statsReader{a.db}.query(ctx, viewCounts, map[string]any{"group_level": 4, "startkey": []any{user}, "endkey": []any{user, map[string]any{}}})
	if err != nil {
		return nil, err
	}
	newest := map[groupKey]float64{}
	for _, row := range rows {
		var k []string
		var v kindStats
		if json.Unmarshal(row.Key, &k) != nil || len(k) != 4 || json.Unmarshal(row.Value, &v) != nil || k[0] != user {
			continue // not a row of this view's shape
		}
		g := groupKey{state.State(k[1]), k[2], k[3]}
		if !g.state.Terminal() {
			continue // read by ID
		}
		newest[g] = v.Max
		sum.AddGroup(user, g.link, g.state, g.class, v.Count)
	}
	return newest, nil
}

// userConflicts counts the conflicted documents of user, from the
// conflicts view.
func (a *admin) userConflicts(ctx context.Context, user string, sum *state.Summarizer) error {
	rows, err := a.db.queryView(ctx, viewsDDoc, viewConflicts, map[string]any{
		"startkey": []any{user}, "endkey": []any{user, map[string]any{}}, "include_docs": true, "conflicts": true,
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Doc != nil {
			countConflicts(sum, r.Doc)
		}
	}
	return nil
}
