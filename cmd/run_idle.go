package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// skipIdle reads user's work in one query and reports whether the run
// ends there, without the run lock and without writing anything: when the
// user never had a transfer, or has nothing due before --max-runtime ends
// (a transfer in its cool-off keeps a run without --max-runtime), nothing
// claimed and nothing submitted, and its run lock is free. The read is advisory (a CouchDB view, without a read
// quorum): a transfer it misses waits for the next start, and a skipped
// run never says the queue drained (docs/guarantees.md, "An idle start").
// A fleet's agent (its fleet found work and holds the lock) and a dry run
// always start; a read that fails leaves the decision to the agent.
func skipIdle(ctx context.Context, g *Globals, o *RunOptions, store state.Store, user string) bool {
	if o.Fleet.Handover.Agent || o.Agent.DryRun {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, o.Agent.PhaseTimeout)
	defer cancel()
	// the agent waits for a cool-off that ends before --max-runtime (any,
	// without one), so work due by then is work now
	at, waitsForAll := time.Now(), o.Agent.MaxRuntime <= 0
	if !waitsForAll {
		at = at.Add(o.Agent.MaxRuntime)
	}
	w, err := store.UserWork(qctx, user, at)
	if err != nil {
		g.Log.WithError(err).Debug("cannot read the user's work; the agent starts")
		return false
	}
	log := g.Log.WithField(FieldUser, user)
	switch {
	case !w.LockedUntil.IsZero():
		return false // the agent says who holds it, or takes it over from a dead holder
	case w.Transfers() == 0:
		log.Info(fmt.Sprintf("no transfers for user %s: nothing to do", user))
	case w.Idle() && !(waitsForAll && w.ByState[state.StateNew] > 0):
		fields := logrus.Fields{}
		for _, s := range state.States {
			fields[string(s)] = w.ByState[s]
		}
		log.WithFields(fields).Info("nothing due before --max-runtime, claimed or submitted: the agent does not start")
	default:
		return false
	}
	return true
}
