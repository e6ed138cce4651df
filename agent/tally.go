package agent

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// PassStats counts what one pass did. Every transfer a pass ended, or sent
// back to the queue, counts once, under one outcome (Done, Failed,
// Retried, Lost, Killed, Released), whichever stage settled it: the claim
// (a failed dependency, a kill request), the submission (an abort, a
// release) or the record of an FTS outcome. The pass's log line, the
// progress display, the run report and the metrics all read these counts;
// the run report is a run's total (Add) under these JSON names, and a
// fleet's agent sends it each pass in them.
type PassStats struct {
	Pass        int `json:"passes"`           // the pass's number; of a run's total, its passes
	Claimed     int `json:"claimed"`          // transfers claimed (and held) by the claims
	Settled     int `json:"settled"`          // transfers a claim ended instead of claiming (also counted in Failed or Killed)
	Submitted   int `json:"submitted"`        // transfers committed to an FTS job (including adopted ones)
	Jobs        int `json:"fts_jobs_created"` // FTS jobs submitted or adopted
	Pending     int `json:"pending"`          // submissions whose outcome is not known yet
	Active      int `json:"active"`           // transfers still running in FTS
	Done        int `json:"done"`
	Failed      int `json:"failed"`  // failed for good
	Retried     int `json:"retried"` // back to the queue with an attempt counted, after the cool-off
	Lost        int `json:"lost"`    // of jobs FTS no longer knows: back to the queue at once, an attempt counted
	Killed      int `json:"killed"`
	Released    int `json:"released"`      // back to the queue without penalty (shutdown, a job FTS never took, a kill request, a job gone with its FTS)
	Moved       int `json:"moved"`         // outcomes not written: another writer had changed the transfer
	Deleted     int `json:"deletions"`     // destination copies deleted
	AlreadyGone int `json:"already_gone"`  // destination copies to delete that gfal-rm found missing: nothing deleted
	LeftInPlace int `json:"left_in_place"` // destination copies the deletion rule left in place: not proved this transfer's
	Existing    int `json:"existing"`      // of Done: "destination exists" failures and lost jobs whose file there is the transfer's own
	// Unrecorded counts terminal outcomes not recorded this pass (retried next pass).
	Unrecorded int `json:"unrecorded"`
	Errors     int `json:"errors"` // phase errors (a batch skipped)

	// the time the pass spent in each stage (a run report says them in
	// seconds, in its phase_seconds)
	Submit  time.Duration `json:"submit_ns"`
	Monitor time.Duration `json:"monitor_ns"`
	Record  time.Duration `json:"record_ns"`

	more bool // the last claim came back full: more is waiting
	// running counts the transfers FTS answered for as still running (of
	// Active, which also counts those of jobs it did not answer for)
	running int
}

// Add folds the next pass q into p, a run's running total: the counts and
// durations add up; Pass, Active, Pending and Unrecorded, which say where
// the run stands, are q's.
func (p *PassStats) Add(q PassStats) {
	p.Pass, p.Active, p.Pending, p.Unrecorded = q.Pass, q.Active, q.Pending, q.Unrecorded
	p.Claimed += q.Claimed
	p.Settled += q.Settled
	p.Submitted += q.Submitted
	p.Jobs += q.Jobs
	p.Done += q.Done
	p.Failed += q.Failed
	p.Retried += q.Retried
	p.Lost += q.Lost
	p.Killed += q.Killed
	p.Released += q.Released
	p.Moved += q.Moved
	p.Deleted += q.Deleted
	p.AlreadyGone += q.AlreadyGone
	p.LeftInPlace += q.LeftInPlace
	p.Existing += q.Existing
	p.Errors += q.Errors
	p.Submit += q.Submit
	p.Monitor += q.Monitor
	p.Record += q.Record
}

// Ended is the number of transfers the pass ended or sent back.
func (p PassStats) Ended() int {
	return p.Done + p.Failed + p.Retried + p.Lost + p.Killed + p.Released
}

// changed: the pass wrote a transfer (claimed, submitted, ended or sent
// back).
func (p PassStats) changed() bool {
	return p.Claimed+p.Submitted+p.Jobs+p.Ended() > 0
}

// progressed: the pass changed something or got through a deletion, or
// FTS answered for transfers still running: the run is doing its work,
// whatever else fails.
func (p PassStats) progressed() bool {
	return p.changed() || p.Deleted+p.AlreadyGone+p.running > 0
}

// drained: the pass found nothing to do: nothing claimed or submitted,
// nothing active, nothing pending, and no outcome (an outcome may unblock
// dependents, which the next pass claims).
func (p PassStats) drained() bool {
	return !p.changed() && p.Active == 0 && p.Unrecorded == 0 && p.Pending == 0 && p.Errors == 0
}

// tally is the one place a pass counts what it did: each method counts an
// event in PassStats and in the metrics, and logs each transfer it
// settles, so that no report of the run can tell another number.
type tally struct {
	ps  PassStats
	m   *Metrics
	log *logrus.Entry
}

func newTally(pass int, m *Metrics, log *logrus.Entry) *tally {
	return &tally{ps: PassStats{Pass: pass}, m: m, log: log}
}

// done ends the pass: its metrics and its log line. The shutdown's tally
// (Pass 0) is no pass: it gets a log line of its own when it settled
// anything, so that the pass lines and it add up to the run's counts.
func (t *tally) done() PassStats {
	ps := t.ps
	msg := "pass"
	switch {
	case ps.Pass != 0:
		t.m.observePass(ps)
	case !ps.changed() && ps.Moved == 0:
		return ps
	default:
		msg = "shutdown"
	}
	t.log.WithFields(logrus.Fields{
		"pass": ps.Pass, "claimed": ps.Claimed, "settled": ps.Settled, "submitted": ps.Submitted, "jobs": ps.Jobs,
		"pending": ps.Pending, "active": ps.Active, "done": ps.Done, "failed": ps.Failed, "retried": ps.Retried,
		"lost": ps.Lost, "killed": ps.Killed, "released": ps.Released, "moved": ps.Moved, "deleted": ps.Deleted,
		"already_gone": ps.AlreadyGone, "left_in_place": ps.LeftInPlace, "existing": ps.Existing, "unrecorded": ps.Unrecorded, "errors": ps.Errors,
		"submit_s": ps.Submit.Seconds(), "monitor_s": ps.Monitor.Seconds(), "record_s": ps.Record.Seconds(),
	}).Info(msg)
	return ps
}

// claimed counts a claim: the transfers it claimed, and those it ended
// instead (logged one by one with their reasons).
func (t *tally) claimed(c state.Claimed) {
	t.ps.Claimed += len(c.Transfers)
	t.m.count("claimed", len(c.Transfers))
	t.m.count("settled", len(c.Settled))
	for i := range c.Settled {
		tr := &c.Settled[i]
		t.ps.Settled++
		o := state.OutcomeFailed
		if tr.State == state.StateKilled {
			o = state.OutcomeKilled
		}
		t.outcome(o, tr.State, tr.ErrorClass)
		t.log.WithField(FieldPhase, "submit").WithField(FieldTransfer, tr.ID).WithField("state", tr.State).
			WithField("reason", tr.Reason).Info("transfer settled by the claim")
	}
}

// submitted counts a job committed with n transfers.
func (t *tally) submitted(n int) {
	t.ps.Submitted += n
	t.ps.Jobs++
	t.m.count("submitted", n)
}

// outcome counts one transfer ended or sent back: o is what happened,
// written the state the store wrote, class the error class of a failure.
func (t *tally) outcome(o state.Outcome, written state.State, class string) {
	label := string(o)
	switch {
	case o == state.OutcomeDone:
		t.ps.Done++
	case o == state.OutcomeKilled:
		t.ps.Killed++
	case o == state.OutcomeLost:
		t.ps.Lost++
	case written == state.StateNew:
		t.ps.Retried++
		label = "retried"
	default:
		t.ps.Failed++
	}
	if o == state.OutcomeFailed {
		t.m.failures.WithLabelValues(label, state.FailureClass(class)).Inc()
	}
	t.m.transfers.WithLabelValues(label).Inc()
}

// recorded counts an outcome written by SetTerminalState (r its result).
func (t *tally) recorded(term *state.Terminal, r state.Result, existing bool) {
	if term.NoPenalty && term.Outcome == state.OutcomeLost && r.State == state.StateNew {
		t.release()
	} else {
		t.outcome(term.Outcome, r.State, term.ErrorClass)
	}
	if existing {
		t.ps.Existing++
	}
	if t.log.Logger.IsLevelEnabled(logrus.InfoLevel) {
		// one line per transfer: built only when it is written
		t.log.WithField(FieldPhase, "record").WithField(FieldTransfer, r.ID).WithField(FieldJob, term.FTSJob).
			WithField("outcome", term.Outcome).WithField("state", r.State).WithField("reason", term.Reason).Info("outcome recorded")
	}
}

// aborted counts the aborts written (res, of list), each by the state its
// write left: failed, back to the queue with an attempt (retried) or
// without one (released).
func (t *tally) aborted(phase string, list []state.Abort, res []state.Result) {
	for i, r := range res {
		l := t.log.WithField(FieldPhase, phase).WithField(FieldTransfer, r.ID)
		if r.Err != nil {
			l.WithError(r.Err).Warn("abort not written")
			continue
		}
		ab := &list[i]
		if ab.NoPenalty && r.State == state.StateNew {
			t.release()
		} else {
			t.outcome(state.OutcomeFailed, r.State, ab.ErrorClass)
		}
		l.WithField("state", r.State).WithField("reason", ab.Reason).Info("transfer aborted")
	}
}

// released counts a release without penalty (res, or err for the whole
// call) and logs what was not written.
func (t *tally) released(phase string, res []state.Result, err error) {
	l := t.log.WithField(FieldPhase, phase)
	if err != nil {
		t.ps.Errors++
		l.WithError(err).Error("release failed; the claims expire by themselves")
		return
	}
	for _, r := range res {
		if r.Err != nil {
			l.WithField(FieldTransfer, r.ID).WithError(r.Err).Warn("release: item not written")
			continue
		}
		t.release()
		l.WithField(FieldTransfer, r.ID).Info("transfer released to the queue")
	}
}

// release counts a transfer sent back to the queue without penalty.
func (t *tally) release() {
	t.ps.Released++
	t.m.transfers.WithLabelValues("released").Inc()
}

// lost logs items of a write found no longer ours: another agent claimed
// them, and the agent leaves them alone.
func (t *tally) lost(phase string, res []state.Result) {
	for _, r := range res {
		if errors.Is(r.Err, state.ErrLeaseLost) {
			t.ps.Moved++
			t.m.transfers.WithLabelValues("moved").Inc()
			t.log.WithField(FieldPhase, phase).WithField(FieldTransfer, r.ID).WithError(r.Err).Warn("transfer no longer ours; leaving it alone")
		}
	}
}

// deletion counts what gfal-rm made of one destination copy to delete:
// deleted, already gone (found missing: no deletion), or not deleted
// (failed, skipped, refused, or no result).
func (t *tally) deletion(status string) {
	event := "delete_failed"
	switch status {
	case srm.StatusDeleted:
		t.ps.Deleted++
		event = "deleted"
	case srm.StatusMissing:
		t.ps.AlreadyGone++
		event = "already_gone"
	}
	t.m.count(event, 1)
}

// leftInPlace counts a destination copy the deletion rule left in place.
func (t *tally) leftInPlace() {
	t.ps.LeftInPlace++
	t.m.count("left_in_place", 1)
}

// fail counts a phase error and logs it.
func (t *tally) fail(phase, msg string, err error) {
	t.ps.Errors++
	t.log.WithField(FieldPhase, phase).WithError(err).Error(msg)
}
