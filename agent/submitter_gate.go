package agent

import (
	"context"

	"github.com/asyncstageout/aso/state"
)

// gate passes the held transfers fresh, about to be planned into jobs,
// through the destination gate (destGate), and returns those that may be
// submitted: the others wait (released until the cool-off has passed) or
// are recorded done, their file already there. When the owners cannot be
// read, nothing is submitted this pass.
func (s *submitter) gate(work context.Context, fresh []state.Transfer, t *tally) []state.Transfer {
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	defer cancel()
	pass, g, err := s.dests.check(ctx, fresh)
	if err != nil {
		t.fail("submit", "reading who owns the destinations failed; nothing submitted this pass", err)
		return nil
	}
	s.abort(work, g.waits, t)
	if len(g.dones) == 0 {
		return pass
	}
	list, res, err := s.book.finish(ctx, g.dones)
	if err != nil {
		t.fail("submit", "recording transfers already there failed; their claims expire by themselves", err)
		return pass
	}
	for i, r := range res {
		if i >= len(list) || r.Err != nil {
			s.log.WithField(FieldTransfer, r.ID).WithError(r.Err).Warn("already there: not recorded")
			continue
		}
		t.recorded(&list[i], r, true)
	}
	return pass
}

// recheck passes the transfers of the prepared jobs, their ownership
// recorded at owned, through the second check of the destination gate
// (destGate.recheck), and returns the jobs with what may still be sent:
// the transfers that yield are taken out and released, waiting; a job
// left empty is forgotten.
func (s *submitter) recheck(work context.Context, jobs []*pendingJob, owned state.Time, t *tally) []*pendingJob {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ids...)
	}
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	yields, err := s.dests.recheck(ctx, s.book.get(ids), owned)
	cancel()
	if err != nil {
		t.fail("submit", "reading who owns the destinations again failed; nothing submitted this pass", err)
	}
	if len(yields) == 0 {
		return jobs
	}
	out := yielded(jobs, yields, s.pending)
	s.abort(work, yields, t)
	return out
}

// yielded takes the transfers of yields out of jobs, forgets (in
// pending) the jobs left empty, and returns the others.
func yielded(jobs []*pendingJob, yields []state.Abort, pending pendingJobs) []*pendingJob {
	gone := map[string]bool{}
	for _, y := range yields {
		gone[y.Transfer.ID] = true
	}
	out := jobs[:0:0]
	for _, j := range jobs {
		keep := j.ids[:0:0]
		for _, id := range j.ids {
			if !gone[id] {
				keep = append(keep, id)
			}
		}
		if len(keep) == 0 {
			delete(pending, j.sid)
			continue
		}
		j.keep(keep)
		out = append(out, j)
	}
	return out
}
