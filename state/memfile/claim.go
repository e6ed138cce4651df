package memfile

import (
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// claimer claims for one agent within one operation: it walks the agent
// user's queue in the index, reads back only the transfers it tries, and
// applies the claim rules of package state to them (see
// state.AgentStore.NewTransfers), staging its writes in x.
type claimer struct {
	x      *tx
	agent  state.Agent
	policy state.Policy
	now    time.Time
}

// inOrder claims up to limit transfers in queue order and reports whether
// the claim walked the queue to its end.
func (c claimer) inOrder(limit int) (state.Claimed, error) {
	x, user := c.x, c.agent.User
	out := state.Claimed{}
	if limit <= 0 {
		return out, nil
	}
	ui := x.d.userOf(user)
	if ui == nil {
		out.End = true
		return out, nil
	}
	last, more := int32(-1), true
	for more && len(out.Transfers) < limit {
		// the next claimable transfers in claim order, as many as are
		// still wanted, read at once
		var slots []int32
		more = false // until the walk stops before the end of the queue
		visit := func(i int32) bool {
			if i == last {
				return true
			}
			last = i
			if st := x.d.stub(&x.d.metas[i], false); state.Claimable(&st, user, c.now) {
				slots = append(slots, i)
			}
			more = len(slots) >= limit-len(out.Transfers)
			return !more
		}
		if last < 0 {
			ui.queue.Ascend(visit)
		} else {
			ui.queue.AscendGreaterOrEqual(last, visit)
		}
		ts, err := x.readForWrite(slots)
		if err != nil {
			return state.Claimed{}, fmt.Errorf("memfile: new transfers: %w", err)
		}
		deps := x.deps(c.policy.DependencyWait)
		for k := range ts {
			c.try(&ts[k], deps, &out)
		}
	}
	out.End = !more
	return out, nil
}

// byLink claims up to r.Limit transfers in state.SpreadOrder, passing over
// links at r.MaxPerLink without writing them. The queue's index holds
// each transfer's link, priority and age, so the queue is ordered without
// reading a document; only the transfers tried are read (see candidates).
func (c claimer) byLink(r state.ClaimRequest) (state.Claimed, error) {
	x, limit := c.x, r.Limit
	out := state.Claimed{}
	ui := x.d.userOf(c.agent.User)
	if ui == nil || limit <= 0 {
		return out, nil
	}
	cands := c.candidates(ui, limit, r)
	order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].prio }, func(i int) linkKey { return cands[i].link })
	budget := state.NewLinkBudget(r)
	deps := x.deps(c.policy.DependencyWait)
	for len(order) > 0 && len(out.Transfers) < limit {
		// the next candidates of links with room, as many as are still wanted
		var pick []int32
		var links []string
		rest := order[:0:0]
		for _, k := range order {
			cand := cands[k]
			if len(pick) >= limit-len(out.Transfers) {
				rest = append(rest, k)
			} else if name := x.d.linkName(cand.link); budget.Take(name) {
				pick, links = append(pick, cand.slot), append(links, name)
			}
		}
		order = rest
		if len(pick) == 0 {
			break
		}
		ts, err := x.readForWrite(pick)
		if err != nil {
			return state.Claimed{}, fmt.Errorf("memfile: new transfers: %w", err)
		}
		for k := range ts {
			if !c.try(&ts[k], deps, &out) {
				budget.Return(links[k])
			}
		}
	}
	return out, nil
}

// fairCandidate is a claimable transfer of the queue, by slot.
type fairCandidate struct {
	slot int32
	prio int
	link linkKey
}

// candidates walks the user's queue in claim order and returns the
// claimable transfers that a claim by link of limit could take: at most
// limit per link (no more could be claimed), less what the link's cap
// leaves; the walk stops at a new priority once the higher ones hold
// twice limit candidates.
func (c claimer) candidates(ui *userIndex, limit int, r state.ClaimRequest) []fairCandidate {
	d := c.x.d
	var out []fairCandidate
	left := map[linkKey]int{} // how many more candidates a link may have
	prio := 0
	ui.queue.Ascend(func(i int32) bool {
		m := &d.metas[i]
		st := d.stub(m, false)
		if !state.Claimable(&st, c.agent.User, c.now) {
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
				n = min(n, r.MaxPerLink-r.Held[d.linkName(l)])
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

// try claims the candidate t, adding it to out.Transfers, or settles it
// when it can never run, adding it to out.Settled; it reports whether t
// was claimed.
func (c claimer) try(t *state.Transfer, deps state.Deps, out *state.Claimed) bool {
	if state.SettleUnrunnable(t, deps, c.now, c.agent.Owner) {
		c.x.put(t)
		out.Settled = append(out.Settled, cloneTransfer(t)) // t is cached once written
		return false
	}
	if !state.ReadyToClaim(t, deps, c.now) {
		return false
	}
	if state.Claim(t, c.agent, c.now, c.policy.LeaseTTL) != nil {
		return false
	}
	c.x.put(t)
	out.Transfers = append(out.Transfers, cloneTransfer(t))
	return true
}

// takeBack expires the live claims of l.User's other agents, once l is
// checked to be the live run lock (see state.AgentStore.TakeBack).
func (c claimer) takeBack(l state.Lock) ([]state.Transfer, error) {
	x, now := c.x, c.now
	if err := state.LockLive(x.getLock(state.LockID(l.User)), l, now); err != nil {
		return nil, fmt.Errorf("memfile: take back claims: %w", err)
	}
	ui := x.d.userOf(l.User)
	if ui == nil {
		return nil, nil
	}
	var slots []int32
	ui.queue.Ascend(func(i int32) bool {
		if st := x.d.stub(&x.d.metas[i], false); st.State == state.StateAcquired && st.LeaseExpires.After(now) {
			slots = append(slots, i)
		}
		return true
	})
	ts, err := x.readAll(slots)
	if err != nil {
		return nil, fmt.Errorf("memfile: take back claims: %w", err)
	}
	var out []state.Transfer
	for k := range ts {
		if state.TakeBackClaim(&ts[k], l, now) {
			x.put(&ts[k])
			out = append(out, cloneTransfer(&ts[k]))
		}
	}
	return out, nil
}
