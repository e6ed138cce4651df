package couch

import (
	"context"
	"encoding/json"

	"github.com/asyncstageout/aso/state"
)

// maxDepRounds bounds the bulk reads one claim round makes to follow
// dependencies: one per level of the graph. A cycle longer than this is
// found by a later round, once its first members were read.
const maxDepRounds = 16

// depGraph reads what the dependency rules need to judge ts: their
// dependencies, and those of the dependencies not terminal, transitively
// (for the cycle check), with one bulk read per level.
func (c *claimer) depGraph(ctx context.Context, ts []state.Transfer) (state.Deps, error) {
	g := state.DepGraph{}
	for i := range ts {
		g.Add(&ts[i])
	}
	missing := map[string]bool{}
	for range maxDepRounds {
		ids := g.Frontier(ts, missing)
		if len(ids) == 0 {
			break
		}
		docs, err := c.rv.readKeys(ctx, ids)
		if err != nil {
			return state.Deps{}, err
		}
		for _, id := range ids {
			var d struct {
				Type      string      `json:"type"`
				State     state.State `json:"state"`
				DependsOn []string    `json:"depends_on"`
			}
			if raw, ok := docs[id]; ok && json.Unmarshal(raw, &d) == nil && d.Type == state.DocType && d.State.Valid() {
				g[id] = state.DepNode{State: d.State, DependsOn: d.DependsOn}
			} else {
				missing[id] = true
			}
		}
	}
	return g.Deps(c.policy.DependencyWait), nil
}
