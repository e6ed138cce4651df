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
