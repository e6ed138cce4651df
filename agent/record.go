package agent

import (
	"context"
	"errors"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// recordPhase passes the write fence, settles the failures "destination
// exists" by the file there (checkExisting), deletes the destination copies
// of failed and cancelled transfers among outs (in one batch, under a
// timeout), then persists their outcomes in one SetTerminalState call. An
// outcome whose deletion failed is not recorded this pass, so the deletion
// is retried next pass (the transfer is still submitted and FTS reports it
// again; a deletion gfal-rm skipped after a hang on the same storage counts
// as no attempt: without limit while gfal-rm deletes something each pass,
// MaxDeleteSkips passes otherwise); after MaxDeleteAttempts it
// is recorded anyway with the deletion failure in its reason, so no outcome
// is lost.
func (a *Agent) recordPhase(work context.Context, outs []outcome, ps *PassStats) {
	if len(outs) == 0 {
		return
	}
	log := a.log.WithField(FieldPhase, "record")
	// the outcomes were read from FTS a moment ago; if the agent was frozen
	// since (SIGSTOP, a starved machine) another agent may have taken the
	// user over and retried these transfers: deleting is a write too, so
	// it passes the write fence first
	if err := a.keeper.mayWrite(); err != nil {
		log.WithError(err).Error("not deleting destination copies: ownership lost")
		return
	}
	held := a.checkExisting(work, outs, ps)
	deleted := ps.Deleted
	failedDelete, skipped := a.deleteDestinations(work, outs, ps)
	// a skip is charged only when gfal-rm deleted nothing: while it gets
	// through some URLs each pass, those behind a hang wait their turn
	progress := ps.Deleted > deleted
	terms := make([]state.Terminal, 0, len(outs))
	var existing []bool // of terms
	for i := range outs {
		o := &outs[i]
		id := o.t.ID
		if held[id] {
			continue // the file at the destination is checked again next pass
		}
		if msg, failed := failedDelete[id]; failed && a.deletionHeld(id, skipped[id], progress) {
			ps.Unrecorded++
			continue
		} else if failed {
			o.reason += "; destination copy not deleted: " + msg
			log.WithField(FieldTransfer, id).Error("giving up deleting the destination copy; recording the outcome")
		}
		terms = append(terms, o.terminal())
		existing = append(existing, o.existing)
	}
	if len(terms) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	res, err := a.store.SetTerminalState(ctx, terms)
	if err != nil {
		ps.Errors++
		ps.Unrecorded += len(terms)
		log.WithError(err).Error("recording outcomes failed; retried next pass")
		return
	}
	info := log.Logger.IsLevelEnabled(logrus.InfoLevel)
	for i, r := range res {
		if i >= len(terms) {
			break
		}
		t := &terms[i]
		switch {
		case r.Err == nil:
			a.forgetCounts(r.ID)
			a.countOutcome(t, r.State, ps)
			if existing[i] {
				ps.Existing++
			}
			if info {
				// one line per transfer: built only when it is written
				log.WithField(FieldTransfer, r.ID).WithField(FieldJob, t.FTSJob).WithField("outcome", t.Outcome).
					WithField("reason", t.Reason).Info("outcome recorded")
			}
		case errors.Is(r.Err, state.ErrLeaseLost):
			a.forgetCounts(r.ID)
			log.WithField(FieldTransfer, r.ID).WithField(FieldJob, t.FTSJob).WithError(r.Err).Warn("outcome not recorded: the transfer moved on")
		default:
			ps.Unrecorded++
			log.WithField(FieldTransfer, r.ID).WithField(FieldJob, t.FTSJob).WithError(r.Err).Error("outcome not recorded; retried next pass")
		}
	}
}

// deletionHeld counts a failed deletion of transfer id's copy (skipped:
// gfal-rm never tried it; progress: it deleted something this pass) and
// reports whether the outcome waits for the next pass: a skip is no
// attempt (charged only in a pass that deleted nothing, MaxDeleteSkips
// times), a failure waits MaxDeleteAttempts times.
func (a *Agent) deletionHeld(id string, skipped, progress bool) bool {
	if skipped && (progress || a.deletes.skips[id] < MaxDeleteSkips) {
		if !progress {
			a.deletes.skips[id]++
		}
		return true
	}
	a.deletes.failures[id]++
	return a.deletes.failures[id] < MaxDeleteAttempts
}

// holds counts, per transfer, the passes an action on it failed and the
// passes it was not attempted, which hold its outcome for the next pass.
type holds struct{ failures, skips map[string]int }

func newHolds() holds { return holds{failures: map[string]int{}, skips: map[string]int{}} }

// held is how many passes the action on transfer id was held.
func (h holds) held(id string) int { return h.failures[id] + h.skips[id] }

func (h holds) forget(id string) {
	delete(h.failures, id)
	delete(h.skips, id)
}

// forgetCounts drops what the agent counted of transfer id (deletions,
// checks, one file per job) once its outcome is written or it moved on.
func (a *Agent) forgetCounts(id string) {
	a.deletes.forget(id)
	a.checks.forget(id)
	delete(a.solo, id)
	delete(a.stale, id)
}

// countOutcome counts the outcome t, recorded with the resulting state
// written: the store's rules decide whether a failure is retried.
func (a *Agent) countOutcome(t *state.Terminal, written state.State, ps *PassStats) {
	label := string(t.Outcome)
	switch t.Outcome {
	case state.OutcomeDone:
		ps.Done++
	case state.OutcomeKilled:
		ps.Killed++
	case state.OutcomeLost:
		ps.Lost++
	case state.OutcomeFailed:
		if written == state.StateNew {
			ps.Retried++
			label = "retried"
		} else {
			ps.Failed++
		}
		a.metrics.failures.WithLabelValues(label, state.FailureClass(t.ErrorClass)).Inc()
	}
	a.metrics.transfers.WithLabelValues(label).Inc()
}

// deleteDestinations deletes the destination PFNs that must go and returns
// the transfers whose deletion failed, with the reason, and among them
// those gfal-rm did not attempt (skipped after a hang on their storage).
func (a *Agent) deleteDestinations(work context.Context, outs []outcome, ps *PassStats) (map[string]string, map[string]bool) {
	var urls []string
	owner := map[string]string{}
	for _, o := range outs {
		if o.deleteDest && o.t.DestPFN != "" {
			urls = append(urls, o.t.DestPFN)
			owner[o.t.DestPFN] = o.t.ID
		}
	}
	// the URLs whose deletion failed or was skipped before go first:
	// gfal-rm works through them in order, and a URL that hangs cuts the
	// run short, so new ones listed first could keep them from their turn
	// until they are recorded with their copy left
	sort.SliceStable(urls, func(i, j int) bool { return a.deletes.held(owner[urls[i]]) > a.deletes.held(owner[urls[j]]) })
	failed, skipped := map[string]string{}, map[string]bool{}
	if len(urls) == 0 {
		return failed, skipped
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.DeleteTimeout)
	defer cancel()
	res, err := a.deleter.Delete(ctx, urls)
	a.metrics.deletes(len(urls), err)
	log := a.log.WithField(FieldPhase, "record")
	if err != nil {
		log.WithError(err).Error("deleting destination copies failed")
	}
	seen := map[string]bool{}
	for _, r := range res {
		seen[r.URL] = true
		if r.Err != nil {
			failed[owner[r.URL]] = r.Err.Error()
			skipped[owner[r.URL]] = r.Status == srm.StatusSkipped
			log.WithField(FieldTransfer, owner[r.URL]).WithField("pfn", r.URL).WithError(r.Err).Warn("deleting the destination copy failed")
			continue
		}
		ps.Deleted++
	}
	for _, u := range urls {
		if !seen[u] {
			msg := "no result from the deletion"
			if err != nil {
				msg = err.Error()
			}
			failed[owner[u]] = msg
		}
	}
	return failed, skipped
}
