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
	// not to be their own file: deleted without another check.
	stale map[string]bool
}

func newRecorder(cfg Config, store Store, book *ledger, d Deleter, k *keeper, m *Metrics, log *logrus.Entry) *recorder {
	r := &recorder{cfg: cfg, store: store, book: book, deleter: fencedDeleter{d, k}, fence: k, metrics: m,
		log: log.WithField(FieldPhase, "record"), deletes: newHolds(), checks: newHolds(), stale: map[string]bool{}}
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
	deleted := t.ps.Deleted
	failedDelete, skipped := r.deleteDestinations(work, outs, t)
	// a skip is charged only when gfal-rm deleted nothing: while it gets
	// through some URLs each pass, those behind a hang wait their turn
	progress := t.ps.Deleted > deleted
	terms := make([]state.Terminal, 0, len(outs))
	var existing []bool // of terms
	for i := range outs {
		o := &outs[i]
		id := o.t.ID
		if held[id] {
			continue // the file at the destination is checked again next pass
		}
		if msg, failed := failedDelete[id]; failed && r.deletionHeld(id, skipped[id], progress) {
			t.ps.Unrecorded++
			continue
		} else if failed {
			o.reason += "; destination copy not deleted: " + msg
			r.log.WithField(FieldTransfer, id).Error("giving up deleting the destination copy; recording the outcome")
		}
		terms = append(terms, o.terminal())
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

// deleteDestinations deletes the destination PFNs that must go and returns
// the transfers whose deletion failed, with the reason, and among them
// those gfal-rm did not attempt (skipped after a hang on their storage).
func (r *recorder) deleteDestinations(work context.Context, outs []outcome, t *tally) (map[string]string, map[string]bool) {
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
	sort.SliceStable(urls, func(i, j int) bool { return r.deletes.held(owner[urls[i]]) > r.deletes.held(owner[urls[j]]) })
	failed, skipped := map[string]string{}, map[string]bool{}
	if len(urls) == 0 {
		return failed, skipped
	}
	ctx, cancel := context.WithTimeout(work, r.cfg.DeleteTimeout)
	defer cancel()
	res, err := r.deleter.Delete(ctx, urls)
	r.metrics.deletes(len(urls), err)
	if err != nil {
		r.log.WithError(err).Error("deleting destination copies failed")
	}
	seen := map[string]bool{}
	for _, d := range res {
		seen[d.URL] = true
		if d.Err != nil {
			failed[owner[d.URL]] = d.Err.Error()
			skipped[owner[d.URL]] = d.Status == srm.StatusSkipped
			r.log.WithField(FieldTransfer, owner[d.URL]).WithField("pfn", d.URL).WithError(d.Err).Warn("deleting the destination copy failed")
			continue
		}
		t.ps.Deleted++
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
