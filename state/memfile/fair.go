package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// claimByLink claims up to r.Limit eligible transfers of the agent's user
// in state.SpreadOrder, passing over links at r.MaxPerLink (see
// state.AgentStore.NewTransfers) without writing them. The queue's index holds each transfer's link,
// priority and age, so the queue is ordered without reading a document;
// only the transfers tried are read. It keeps at most limit candidates of
// a link (no more could be claimed), and stops walking the queue once the
// priorities above the current one offer twice limit candidates.
func (s *Store) claimByLink(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	var out state.Claimed
	limit := r.Limit
	err := s.update(ctx, "new transfers", true, func(x *tx, now time.Time) error {
		out = state.Claimed{}
		ui := x.d.userOf(s.agent.User)
		if ui == nil || limit <= 0 {
			return nil
		}
		cands := fairCandidates(x, ui, s.agent.User, now, limit, r)
		order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].prio }, func(i int) linkKey { return cands[i].link })
		budget := state.NewLinkBudget(r)
		deps := txDeps(x, s.policy.DependencyWait)
		for len(order) > 0 && len(out.Transfers) < limit {
			// the next candidates of links with room, as many as are still wanted
			var pick []int32
			var links []string
			rest := order[:0:0]
			for _, k := range order {
				c := cands[k]
				if len(pick) >= limit-len(out.Transfers) {
					rest = append(rest, k)
				} else if name := x.d.linkName(c.link); budget.Take(name) {
					pick, links = append(pick, c.slot), append(links, name)
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
				if !s.tryClaim(x, &ts[k], deps, now, &out) {
					budget.Return(links[k])
				}
			}
		}
		return nil
	})
	if err != nil {
		return state.Claimed{}, err
	}
	return out, nil
}

// linkKey is a link as the string-table ids of its sites.
type linkKey struct{ src, dst uint32 }

func (d *db) linkName(l linkKey) string { return d.strs.strs[l.src] + "->" + d.strs.strs[l.dst] }

// fairCandidate is a claimable transfer of the queue, by slot.
type fairCandidate struct {
	slot int32
	prio int
	link linkKey
}

// fairCandidates walks the user's queue in claim order and returns the
// claimable transfers that a fair claim of limit could take: at most limit
// per link, less what the link's cap leaves; the walk stops at a new
// priority once the higher ones hold limit candidates.
func fairCandidates(x *tx, ui *userIndex, user string, now time.Time, limit int, r state.ClaimRequest) []fairCandidate {
	var out []fairCandidate
	left := map[linkKey]int{} // how many more candidates a link may have
	prio := 0
	ui.queue.Ascend(func(i int32) bool {
		m := &x.d.metas[i]
		st := x.d.stub(m, false)
		if !state.Claimable(&st, user, now) {
			return true
		}
		if p := int(m.priority); len(out) == 0 || p != prio {
			if len(out) >= 2*limit {
				return false // the higher priorities fill the claim, even if some cannot be claimed
			}
			prio = p
		}
		l := linkKey{m.src, m.dst}
		n, seen := left[l]
		if !seen {
			n = limit
			if r.MaxPerLink > 0 {
				n = min(n, r.MaxPerLink-r.Held[x.d.linkName(l)])
			}
		}
		if n > 0 {
			out = append(out, fairCandidate{slot: i, prio: prio, link: l})
			n--
		}
		left[l] = n
		return true
	})
	return out
}

// tryClaim claims the candidate c in x, adding it to out.Transfers, or
// settles it when it can never run, adding it to out.Settled; it reports
// whether c was claimed.
func (s *Store) tryClaim(x *tx, c *state.Transfer, deps state.Deps, now time.Time, out *state.Claimed) bool {
	if state.SettleUnrunnable(c, deps, now, s.agent.Owner) {
		x.put(c)
		out.Settled = append(out.Settled, *c)
		return false
	}
	if !state.ReadyToClaim(c, deps, now) {
		return false
	}
	if state.Claim(c, s.agent, now, s.policy.LeaseTTL) != nil {
		return false
	}
	x.put(c)
	out.Transfers = append(out.Transfers, *c)
	return true
}
