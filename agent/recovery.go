package agent

import (
	"context"

	"github.com/asyncstageout/aso/state"
)

// takeBack runs once the run lock is held: no other agent of the user is
// alive, so the claims of any other owner belong to an agent that died
// (SIGKILL, a crashed host). They are made claimable at once, in one bulk
// write, instead of waiting out their leases; the first pass claims them,
// and those with a submit_sid go through the lookup of their job in FTS by
// its deterministic ID like any claim that carries one (never a blind
// resubmission). A store without the ability leaves them to expire.
func (a *Agent) takeBack(work context.Context, lock state.Lock) {
	if a.recoverer == nil {
		return
	}
	if a.fence() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout) // fenced by the store's decorator
	defer cancel()
	back, err := a.recoverer.TakeBack(ctx, lock)
	if err != nil {
		a.log.WithError(err).Warn("taking back the claims of dead agents failed; they are claimed once their leases expire")
		return
	}
	if len(back) == 0 {
		return
	}
	for _, t := range back {
		if n := len(t.History); n > 0 {
			a.log.WithField(FieldTransfer, t.ID).WithField("sid", t.SubmitSID).Info(t.History[n-1].Reason)
		}
	}
	a.metrics.count("taken_back", len(back))
	a.log.WithField("transfers", len(back)).Warn("took back the claims of agents that are no longer running; they are claimed at once")
}
