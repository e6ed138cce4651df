package agent

import (
	"context"
	"sync"

	"github.com/asyncstageout/aso/state"
)

// Link fairness (Config.MaxActivePerLink). The store claims in fair order
// and passes over links at their cap (state.LinkClaimer), in the one round
// trip of a claim; the agent tells it how many transfers of each link it
// already holds: the submitted ones counted by the last monitor phase (plus
// those committed since) and the claimed ones it holds. A store without
// the ability claims in queue order, and the agent releases (without
// penalty) what exceeds a link's cap: released transfers go to the back of
// the queue, so the head of a big backlog rotates instead of being claimed
// again and again.

// linkCounts counts the agent's submitted transfers per link.
type linkCounts struct {
	mu        sync.Mutex
	submitted map[string]int
	next      map[string]int // the count of the monitor phase under way
}

// begin starts a monitor phase's count; the function it returns ends it.
// When the phase had errors (a group not listed, say) the new count may
// miss transfers, so each link keeps the larger of the old and new counts:
// a link is never thought emptier than it is.
func (l *linkCounts) begin(ps *PassStats) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = map[string]int{}
	errs := ps.Errors
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if ps.Errors > errs {
			for k, n := range l.submitted {
				l.next[k] = max(l.next[k], n)
			}
		}
		l.submitted, l.next = l.next, nil
	}
}

// observe counts a monitored group: its listed transfers, less those that
// ended.
func (l *linkCounts) observe(jobs []state.Job, outs []outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next == nil {
		l.next = map[string]int{}
	}
	for _, j := range jobs {
		for i := range j.Transfers {
			l.next[j.Transfers[i].Link()]++
		}
	}
	for _, o := range outs {
		l.next[o.t.Link()]--
	}
}

// noteCommitted counts transfers just committed to an FTS job, by link.
func (a *Agent) noteCommitted(links []string) {
	a.links.mu.Lock()
	defer a.links.mu.Unlock()
	if a.links.submitted == nil {
		a.links.submitted = map[string]int{}
	}
	for _, l := range links {
		a.links.submitted[l]++
	}
}

// activeByLink is what the agent holds per link: submitted and claimed.
func (a *Agent) activeByLink() map[string]int {
	m := map[string]int{}
	a.links.mu.Lock()
	for l, n := range a.links.submitted {
		m[l] += n
	}
	a.links.mu.Unlock()
	a.book.countLinks(m)
	return m
}

// claimer returns the claim of one batch, fairly across links when a cap
// is set, and whether it saw the end of the queue (false when the store
// does not say). What the agent holds per link is counted now, by the
// caller, so that a claim running while the batch before is submitted sees
// each of that batch's transfers exactly once (held or submitted).
func (a *Agent) claimer() func(ctx context.Context) ([]state.Transfer, bool, error) {
	if a.cfg.MaxActivePerLink > 0 {
		o := state.ClaimOptions{MaxPerLink: a.cfg.MaxActivePerLink, Active: a.activeByLink()}
		return func(ctx context.Context) ([]state.Transfer, bool, error) {
			ts, err := a.claimCapped(ctx, o)
			return ts, false, err
		}
	}
	if a.ender != nil {
		return func(ctx context.Context) ([]state.Transfer, bool, error) {
			return a.ender.NewTransfersEnd(ctx, a.cfg.BatchSize)
		}
	}
	return func(ctx context.Context) ([]state.Transfer, bool, error) {
		ts, err := a.store.NewTransfers(ctx, a.cfg.BatchSize)
		return ts, false, err
	}
}

// claimCapped claims one batch within the link budget of o.
func (a *Agent) claimCapped(ctx context.Context, o state.ClaimOptions) ([]state.Transfer, error) {
	if a.linkClaimer != nil {
		return a.linkClaimer.NewTransfersByLink(ctx, a.cfg.BatchSize, o)
	}
	claimed, err := a.store.NewTransfers(ctx, a.cfg.BatchSize)
	if err != nil || len(claimed) == 0 {
		return claimed, err
	}
	budget := state.NewLinkBudget(o)
	keep := claimed[:0:0]
	var excess []state.Abort
	for _, t := range claimed {
		// a transfer with a sid may already be in FTS (its agent died
		// before the commit): it is kept whatever the cap, to be looked up
		// by its sid; a release would drop the sid, and it would be
		// submitted again under another
		if budget.Take(t.Link()) || t.SubmitSID != "" {
			keep = append(keep, t)
		} else {
			excess = append(excess, state.Abort{Transfer: t, NoPenalty: true,
				Reason: "link " + t.Link() + " is at --max-active-per-link; released for later"})
		}
	}
	if len(excess) > 0 {
		if _, err := a.store.AbortTransfers(ctx, excess); err != nil {
			// they stay claimed by nobody in memory; their leases expire
			a.log.WithField(FieldPhase, "submit").WithError(err).Warn("releasing transfers over the link cap failed; their leases will expire")
		}
	}
	return keep, nil
}
