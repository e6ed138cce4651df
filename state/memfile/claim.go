package memfile

import (
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// claimer claims for one agent within one operation: it walks the agent
// user's queue (userIndex) in claim order and applies the claim rules of
// package state to the transfers it tries (see
// state.AgentStore.NewTransfers), staging its writes in x.
type claimer struct {
	x      *tx
	agent  state.Agent
	policy state.Policy
	now    time.Time
}

// inOrder claims up to limit transfers in queue order and reports whether
// the claim walked the queue to its end.
func (c claimer) inOrder(limit int) state.Claimed {
	if limit <= 0 {
		return state.Claimed{}
	}
	out := state.Claimed{End: true}
	ui := c.x.d.users[c.agent.User]
	if ui == nil {
		return out
	}
	deps := c.x.deps(c.policy.DependencyWait)
	ui.queue.Ascend(func(t *state.Transfer) bool {
		if state.Claimable(t, c.agent.User, c.now) {
			c.try(edit(t), deps, &out)
		}
		out.End = len(out.Transfers) < limit
		return out.End
	})
	return out
}

// byLink claims up to r.Limit transfers in state.SpreadOrder, passing over
// links at r.MaxPerLink without writing them.
func (c claimer) byLink(r state.ClaimRequest) state.Claimed {
	out := state.Claimed{}
	ui := c.x.d.users[c.agent.User]
	if ui == nil || r.Limit <= 0 {
		return out
	}
	cands := c.candidates(ui, r)
	order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].Priority }, func(i int) string { return cands[i].Link() })
	budget := state.NewLinkBudget(r)
	deps := c.x.deps(c.policy.DependencyWait)
	for _, k := range order {
		if len(out.Transfers) >= r.Limit {
			break
		}
		if link := cands[k].Link(); budget.Take(link) && !c.try(edit(cands[k]), deps, &out) {
			budget.Return(link)
		}
	}
	return out
}

// candidates walks the user's queue in claim order and returns the
// claimable transfers that a claim by link of r.Limit could take: at most
// r.Limit per link (no more could be claimed), less what the link's cap
// leaves; the walk stops at a new priority once the higher ones hold
// twice r.Limit candidates.
func (c claimer) candidates(ui *userIndex, r state.ClaimRequest) []*state.Transfer {
	var out []*state.Transfer
	left := map[string]int{} // how many more candidates a link may have
	ui.queue.Ascend(func(t *state.Transfer) bool {
		if !state.Claimable(t, c.agent.User, c.now) {
			return true
		}
		if len(out) >= 2*r.Limit && t.Priority != out[len(out)-1].Priority {
			return false // the higher priorities fill the claim, even if some cannot be claimed
		}
		link := t.Link()
		n, seen := left[link]
		if !seen {
			n = r.Limit
			if r.MaxPerLink > 0 {
				n = min(n, r.MaxPerLink-r.Held[link])
			}
		}
		if n > 0 {
			out = append(out, t)
			n--
		}
		left[link] = n
		return true
	})
	return out
}

// try claims the candidate t, adding it to out.Transfers, or settles it
// when it can never run, adding it to out.Settled; it reports whether t
// was claimed.
func (c claimer) try(t *state.Transfer, deps state.Deps, out *state.Claimed) bool {
	if state.SettleUnrunnable(t, deps, c.now, c.agent.Owner) {
		c.x.put(t)
		out.Settled = append(out.Settled, clone(t))
		return false
	}
	if !state.ReadyToClaim(t, deps, c.now) || state.Claim(t, c.agent, c.now, c.policy.LeaseTTL) != nil {
		return false
	}
	c.x.put(t)
	out.Transfers = append(out.Transfers, clone(t))
	return true
}

// takeBack expires the live claims of l.User's other agents, once l is
// checked to be the live run lock (see state.AgentStore.TakeBack).
func (c claimer) takeBack(l state.Lock) ([]state.Transfer, error) {
	if err := state.LockLive(c.x.getLock(state.LockID(l.User)), l, c.now); err != nil {
		return nil, fmt.Errorf("memfile: take back claims: %w", err)
	}
	var out []state.Transfer
	if ui := c.x.d.users[l.User]; ui != nil {
		ui.queue.Ascend(func(t *state.Transfer) bool {
			if t.State != state.StateAcquired || !t.LeaseExpires.After(c.now) {
				return true
			}
			if t := edit(t); state.TakeBackClaim(t, l, c.now) {
				c.x.put(t)
				out = append(out, clone(t))
			}
			return true
		})
	}
	return out, nil
}
