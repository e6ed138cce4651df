package agent

import (
	"context"
	"errors"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// recorder writes the outcomes the monitor found: it settles the failures
// "destination exists" by the file there (checkExisting), deletes the
// destination copies of failed and cancelled transfers, and records the
// outcomes in one write. It remembers, per transfer, the deletions and
// checks that failed or were skipped, which hold an outcome for the next
// pass, and the transfers whose destination was found not their own.
type recorder struct {
	cfg     Config
	store   Store
	book    *ledger
	deleter Deleter            // fenced
	checker DestinationChecker // the deleter's, if it is one; else nil
	fence   *keeper
	metrics *Metrics
	log     *logrus.Entry
	// deletes and checks count, per transfer, the failed and the skipped
	// deletions of its destination copy and checks of the file there.
	deletes, checks holds
	// stale are the source-missing transfers whose destination was found
	// not to be their own file: the deletion rule decides on it without
	// another check.
	stale map[string]bool
	// rule decides every deletion (deletionRule).
	rule deletionRule
}

func newRecorder(cfg Config, store Store, book *ledger, d Deleter, k *keeper, m *Metrics, log *logrus.Entry) *recorder {
	r := &recorder{cfg: cfg, store: store, book: book, deleter: fencedDeleter{d, k}, fence: k, metrics: m,
		log: log.WithField(FieldPhase, "record"), deletes: newHolds(), checks: newHolds(), stale: map[string]bool{},
		rule: deletionRule{store: store}}
	r.checker, _ = d.(DestinationChecker)
	return r
}

// record passes the write fence, settles the failures "destination exists"
// by the file there (checkExisting), deletes the destination copies of
// failed and cancelled transfers among outs (in one batch, under a
// timeout), then persists their outcomes in one SetTerminalState call. An
// outcome whose deletion failed is not recorded this pass, so the deletion
// is retried next pass (the transfer is still submitted and FTS reports it
// again; a deletion gfal-rm skipped after a hang on the same storage counts
// as no attempt: without limit while gfal-rm deletes something each pass,
// MaxDeleteSkips passes otherwise); after MaxDeleteAttempts it is recorded
// anyway with the deletion failure in its reason, so no outcome is lost.
func (r *recorder) record(work context.Context, outs []outcome, t *tally) {
	if len(outs) == 0 {
		return
	}
	// the outcomes were read from FTS a moment ago; if the agent was frozen
	// since (SIGSTOP, a starved machine) another agent may have taken the
	// user over and retried these transfers: deleting is a write too, so
	// it passes the write fence first
	if err := r.fence.mayWrite(); err != nil {
		r.log.WithError(err).Error("not deleting destination copies: ownership lost")
		return
	}
	held := r.checkExisting(work, outs, t)
	through := t.ps.Deleted + t.ps.AlreadyGone
	dels := r.deleteDestinations(work, outs, t)
	// a skip is charged only when gfal-rm got through no URL: while it gets
	// through some each pass, those behind a hang wait their turn
	progress := t.ps.Deleted+t.ps.AlreadyGone > through
	terms := make([]state.Terminal, 0, len(outs))
	var existing []bool // of terms
	for i := range outs {
		o := &outs[i]
		id := o.t.ID
		if held[id] {
			continue // the file at the destination is checked again next pass
		}
		term := o.terminal()
		d, ok := dels[id]
		if ok {
			if d.failed() && d.status != srm.StatusRefused && r.deletionHeld(id, d.status == srm.StatusSkipped, progress) {
				t.ps.Unrecorded++
				continue
			}
			term.Notes = append(term.Notes, r.deletionNote(o, d))
			switch {
			case d.status == statusLeft:
				term.Reason += "; " + d.msg
			case d.failed() && d.status != srm.StatusRefused:
				term.Reason += "; destination copy not deleted: " + d.msg
				r.log.WithField(FieldTransfer, id).Error("giving up deleting the destination copy; recording the outcome")
			}
		}
		term.DestCopy = destCopyOf(o, d, ok)
		terms = append(terms, term)
		existing = append(existing, o.existing)
	}
	r.write(work, terms, existing, t)
}

// write records terms (existing[i]: term i is a "destination exists" found
// the transfer's own) in one SetTerminalState call and counts them.
func (r *recorder) write(work context.Context, terms []state.Terminal, existing []bool, t *tally) {
	if len(terms) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, r.cfg.PhaseTimeout)
	defer cancel()
	res, err := r.store.SetTerminalState(ctx, terms)
	if err != nil {
		t.ps.Unrecorded += len(terms)
		t.fail("record", "recording outcomes failed; retried next pass", err)
		return
	}
	r.book.ended(res)
	for i, rs := range res {
		if i >= len(terms) {
			break
		}
		term := &terms[i]
		switch {
		case rs.Err == nil:
			r.forget(rs.ID)
			t.recorded(term, rs, existing[i])
		case errors.Is(rs.Err, state.ErrLeaseLost):
			r.forget(rs.ID)
			t.ps.Moved++
			r.log.WithField(FieldTransfer, rs.ID).WithField(FieldJob, term.FTSJob).WithError(rs.Err).Warn("outcome not recorded: the transfer moved on")
		default:
			t.ps.Unrecorded++
			r.log.WithField(FieldTransfer, rs.ID).WithField(FieldJob, term.FTSJob).WithError(rs.Err).Error("outcome not recorded; retried next pass")
		}
	}
}

// deletionHeld counts a failed deletion of transfer id's copy (skipped:
// gfal-rm never tried it; progress: it deleted something this pass) and
// reports whether the outcome waits for the next pass: a skip is no
// attempt (charged only in a pass that deleted nothing, MaxDeleteSkips
// times), a failure waits MaxDeleteAttempts times.
func (r *recorder) deletionHeld(id string, skipped, progress bool) bool {
	if skipped && (progress || r.deletes.skips[id] < MaxDeleteSkips) {
		if !progress {
			r.deletes.skips[id]++
		}
		return true
	}
	r.deletes.failures[id]++
	return r.deletes.failures[id] < MaxDeleteAttempts
}

// forget drops what the recorder counted of transfer id (deletions,
// checks) once its outcome is written or it moved on.
func (r *recorder) forget(id string) {
	r.deletes.forget(id)
	r.checks.forget(id)
	delete(r.stale, id)
}

// deletion is what became of a transfer's destination copy.
type deletion struct {
	pfn    string
	status string // srm's: DELETED, MISSING, FAILED, SKIPPED or REFUSED ("" no result)
	msg    string // why it failed
}

// statusLeft is the status of a copy the deletion rule left in place:
// not a failure, no attempt was made.
const statusLeft = "LEFT"

func (d deletion) failed() bool {
	return d.status != srm.StatusDeleted && d.status != srm.StatusMissing && d.status != statusLeft
}

// destCopyOf is what the outcome o records of the copy its attempt may
// have left (state.Transfer.DestWritten), d being what became of its
// deletion (tried: one was decided): gone once deleted or found missing;
// left when the attempt began writing and the copy was not deleted, or
// when a lost job was last seen copying (FTS state ACTIVE).
func destCopyOf(o *outcome, d deletion, tried bool) state.DestCopy {
	switch {
	case tried && (d.status == srm.StatusDeleted || d.status == srm.StatusMissing):
		return state.CopyGone
	case o.wrote:
		return state.CopyLeft
	case o.outcome == state.OutcomeLost && o.t.Progress != nil && o.t.Progress.FTSState == "ACTIVE":
		return state.CopyLeft
	}
	return state.CopyUnchanged
}

// deletionNote is the history entry of d on o's transfer: what was done to
// its destination copy, why and with what result.
func (r *recorder) deletionNote(o *outcome, d deletion) string {
	why := "the transfer failed after FTS started copying it"
	switch {
	case o.outcome == state.OutcomeKilled:
		why = "the transfer was killed after FTS started copying it"
	case r.stale[o.t.ID]:
		why = "the file there is not this transfer's finished file but the partial copy an earlier attempt of it left"
	}
	switch d.status {
	case statusLeft:
		return d.msg + ": " + d.pfn
	case srm.StatusDeleted:
		return "deleted the destination copy " + d.pfn + ": " + why
	case srm.StatusMissing:
		return "the destination copy " + d.pfn + " to delete (" + why + ") was already gone"
	case srm.StatusRefused:
		return "did not delete " + d.pfn + ": it is the transfer's source"
	}
	return "could not delete the destination copy " + d.pfn + " (" + why + "): " + d.msg
}

// deleteDestinations deletes the destination PFNs that must go and returns
// what became of each, by transfer. A PFN the deleter refuses because it
// is the transfer's source is logged at error: such a transfer should not
// have reached FTS.
func (r *recorder) deleteDestinations(work context.Context, outs []outcome, t *tally) map[string]deletion {
	out := r.judge(work, outs, t)
	var targets []srm.Target
	owner := map[string]string{}
	for _, o := range outs {
		if _, left := out[o.t.ID]; o.deleteDest && o.t.DestPFN != "" && !left {
			targets = append(targets, srm.Target{URL: o.t.DestPFN, Source: o.t.SourcePFN})
			owner[o.t.DestPFN] = o.t.ID
		}
	}
	if len(targets) == 0 {
		return out
	}
	// the URLs whose deletion failed or was skipped before go first:
	// gfal-rm works through them in order, and a URL that hangs cuts the
	// run short, so new ones listed first could keep them from their turn
	// until they are recorded with their copy left
	sort.SliceStable(targets, func(i, j int) bool {
		return r.deletes.held(owner[targets[i].URL]) > r.deletes.held(owner[targets[j].URL])
	})
	ctx, cancel := context.WithTimeout(work, r.cfg.DeleteTimeout)
	defer cancel()
	res, err := r.deleter.Delete(ctx, targets)
	if err != nil {
		r.log.WithError(err).Error("deleting destination copies failed")
	}
	for _, d := range res {
		id := owner[d.URL]
		log := r.log.WithField(FieldTransfer, id).WithField("pfn", d.URL)
		out[id] = deletion{pfn: d.URL, status: d.Status}
		t.deletion(d.Status)
		switch {
		case d.Status == srm.StatusRefused:
			out[id] = deletion{pfn: d.URL, status: d.Status, msg: d.Err.Error()}
			log.WithError(d.Err).Error("refused to delete the destination copy: it is the transfer's source")
		case d.Err != nil:
			out[id] = deletion{pfn: d.URL, status: d.Status, msg: d.Err.Error()}
			log.WithError(d.Err).Warn("deleting the destination copy failed")
		case d.Status == srm.StatusMissing:
			log.Info("destination copy to delete already gone")
		default:
			log.Info("destination copy deleted")
		}
	}
	for _, tg := range targets {
		if _, ok := out[owner[tg.URL]]; !ok {
			t.deletion("")
			msg := "no result from the deletion"
			if err != nil {
				msg = err.Error()
			}
			out[owner[tg.URL]] = deletion{pfn: tg.URL, msg: msg}
		}
	}
	return out
}

// judge passes the candidates for deletion among outs through the
// deletion rule, under the phase's timeout, and returns those it leaves
// in place, by transfer, each with its reason.
func (r *recorder) judge(work context.Context, outs []outcome, t *tally) map[string]deletion {
	var cs []candidate
	for i := range outs {
		if o := &outs[i]; o.deleteDest {
			cs = append(cs, candidate{t: o.t, wrote: o.wrote})
		}
	}
	left := map[string]deletion{}
	if len(cs) == 0 {
		return left
	}
	ctx, cancel := context.WithTimeout(work, r.cfg.PhaseTimeout)
	defer cancel()
	for i, why := range r.rule.judge(ctx, cs) {
		if why == "" {
			continue
		}
		id := cs[i].t.ID
		left[id] = deletion{pfn: cs[i].t.DestPFN, status: statusLeft, msg: why}
		t.leftInPlace()
		r.log.WithField(FieldTransfer, id).WithField("pfn", cs[i].t.DestPFN).Warn("destination copy " + why)
	}
	return left
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
