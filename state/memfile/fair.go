package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

var _ state.LinkClaimer = (*Store)(nil)

// NewTransfersByLink claims up to limit eligible transfers of the agent's
// user in state.SpreadOrder, passing over links at o.MaxPerLink (see
// state.LinkClaimer). The queue's index holds each transfer's link,
// priority and age, so the whole queue is ordered without reading a
// document; only the transfers tried are read.
func (s *Store) NewTransfersByLink(ctx context.Context, limit int, o state.ClaimOptions) ([]state.Transfer, error) {
	var out []state.Transfer
	err := s.update(ctx, "new transfers", true, func(x *tx, now time.Time) error {
		out = nil
		ui := x.d.userOf(s.agent.User)
		if ui == nil || limit <= 0 {
			return nil
		}
		var slots []int32
		var stubs []state.Transfer
		ui.queue.Ascend(func(i int32) bool {
			if st := x.d.stub(&x.d.metas[i], false); state.Claimable(&st, s.agent.User, now) {
				slots, stubs = append(slots, i), append(stubs, st)
			}
			return true
		})
		order := state.SpreadOrder(stubs)
		budget := state.NewLinkBudget(o)
		deps := txDeps(x, s.policy.DependencyWait)
		for len(order) > 0 && len(out) < limit {
			// the next candidates of links with room, as many as are still wanted
			var pick []int32
			var links []string
			rest := order[:0:0]
			for _, k := range order {
				if len(pick) < limit-len(out) && budget.Take(stubs[k].Link()) {
					pick, links = append(pick, slots[k]), append(links, stubs[k].Link())
				} else if len(pick) >= limit-len(out) {
					rest = append(rest, k)
				}
			}
			order = rest
			if len(pick) == 0 {
				break
			}
			ts, err := x.readAll(pick)
			if err != nil {
				return fmt.Errorf("memfile: new transfers: %w", err)
			}
			for k := range ts {
				if s.tryClaim(x, &ts[k], deps, now) {
					out = append(out, ts[k])
				} else {
					budget.Return(links[k])
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// tryClaim claims the candidate c in x, or settles it when it can never
// run; it reports whether c was claimed.
func (s *Store) tryClaim(x *tx, c *state.Transfer, deps state.Deps, now time.Time) bool {
	if state.SettleUnrunnable(c, deps, now, s.agent.Owner) {
		x.put(c)
		return false
	}
	if v, _ := state.CheckDeps(c, deps, now); v != state.DepsReady {
		return false
	}
	if state.Claim(c, s.agent, now, s.policy.LeaseTTL) != nil {
		return false
	}
	x.put(c)
	return true
}
