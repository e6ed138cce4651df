package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// outcome is a terminal result found by the monitor, to be recorded. It
// points at the transfer in the group's listing instead of copying it:
// the group holds every transfer once, and the recorder copies only those
// it writes.
type outcome struct {
	t         *state.Transfer
	job       string
	outcome   state.Outcome
	reason    string
	retryable bool
	class     state.ErrorClass // of a failure
	// deleteDest: the destination copy is a candidate for deletion before
	// recording (a failed or cancelled transfer may have left a partial
	// file); the deletion rule (deletionRule) decides. Never for a lost
	// job: nothing says that job wrote the file at the destination, which
	// may be somebody else's (FTS refuses to overwrite it); if the lost
	// job did leave a copy, the next submission fails with "file exists"
	// and says so.
	deleteDest bool
	// wrote: FTS showed that this attempt began writing the destination
	// (attemptWrote; for a kill, url-copy had started).
	wrote bool
	// existing: a failure "destination exists" or a lost job whose file
	// there is the transfer's own, recorded done (see
	// recorder.checkExisting)
	existing bool
	// gone: a lost job that ended with the FTS server that held it
	// (fts.JobStatus.Gone): no attempt is counted
	gone bool
}

// terminal is the SetTerminalState item of o.
func (o *outcome) terminal() state.Terminal {
	return state.Terminal{Transfer: *o.t, Outcome: o.outcome, Reason: o.reason, Retryable: o.retryable, ErrorClass: string(o.class),
		FTSJob: o.job, NoPenalty: o.gone}
}

// monitor asks FTS about the user's active jobs, one group at a time:
// records the progress of running transfers, cancels those whose kill was
// requested, and returns the outcomes of those that ended.
type monitor struct {
	cfg     Config
	store   Store
	book    *ledger
	eps     *endpoints
	metrics *Metrics
	log     *logrus.Entry
}

func newMonitor(cfg Config, store Store, book *ledger, eps *endpoints, m *Metrics, log *logrus.Entry) *monitor {
	return &monitor{cfg: cfg, store: store, book: book, eps: eps, metrics: m, log: log.WithField(FieldPhase, "monitor")}
}

// groups lists the user's active jobs and cuts them into the groups check
// takes (groupJobs). ok is false when the listing failed (an error of the
// pass).
func (m *monitor) groups(work context.Context, t *tally) ([][]string, bool) {
	ctx, cancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
	refs, err := m.store.ActiveJobs(ctx, m.cfg.User)
	cancel()
	if err != nil {
		t.fail("monitor", "listing active jobs failed; retried next pass", err)
		return nil, false
	}
	return groupJobs(refs, m.cfg.MonitorGroup, fts.MaxJobsPerQuery), true
}

// groupJobs cuts jobs into consecutive groups of whole jobs holding at most
// bound transfers each (a job larger than bound is a group of its own). A
// group the bound closes after more than perQuery jobs is cut back to a
// multiple of perQuery jobs, the rest starting the next group, so that
// every FTS status request but the last asks about perQuery jobs.
func groupJobs(jobs []state.JobRef, bound, perQuery int) [][]string {
	var out [][]string
	for s := 0; s < len(jobs); {
		e, n := s, 0
		for e < len(jobs) && (e == s || n+jobs[e].Transfers <= bound) {
			n += jobs[e].Transfers
			e++
		}
		if k := e - s; e < len(jobs) && k > perQuery {
			e = s + k - k%perQuery
		}
		ids := make([]string, e-s)
		for i := range ids {
			ids[i] = jobs[s+i].ID
		}
		out = append(out, ids)
		s = e
	}
	return out
}

// check reads the transfers of the jobs ids while it asks the agent's own
// endpoint for their status (earlyStatus), asks other endpoints for theirs,
// records progress, cancels kills, and returns the terminal outcomes. A
// group whose listing or status fails is skipped this pass.
func (m *monitor) check(work context.Context, ids []string, t *tally) []outcome {
	// FTS's answer, its client's retries included, within the phase's bound
	ectx, ecancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
	defer ecancel()
	early := m.eps.askEarly(ectx, ids)
	ctx, cancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
	jobs, err := m.store.ActiveTransfersOf(ctx, m.cfg.User, ids)
	cancel()
	if err != nil {
		early.wait()
		t.fail("monitor", "listing active transfers failed; retried next pass", err)
		return nil
	}
	outs := m.checkJobs(work, jobs, t, early)
	early.wait()
	m.book.observeLinks(jobs, outs)
	return outs
}

// checkJobs queries FTS for jobs in bulk and settles what the answers say.
func (m *monitor) checkJobs(work context.Context, jobs []state.Job, t *tally, early *earlyStatus) []outcome {
	if len(jobs) == 0 {
		return nil
	}
	// the client bounds each request of 100 jobs by its own timeout; a batch
	// that times out comes back with Err set and is skipped this pass
	ctx, cancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
	sts, err := m.eps.statusAt(ctx, jobs, early)
	cancel()
	if err != nil {
		t.fail("monitor", "FTS status failed", err)
		return nil
	}
	byJob := make(map[string]*fts.JobStatus, len(sts))
	for i := range sts {
		byJob[sts[i].JobID] = &sts[i]
	}
	now := m.cfg.Now()
	n := 0
	for _, j := range jobs {
		n += len(j.Transfers)
	}
	c := checked{outs: make([]outcome, 0, n)} // room for all: with fast transfers most end here
	for _, j := range jobs {
		st := byJob[j.ID]
		if st == nil || st.Err != nil {
			t.ps.Errors++
			t.ps.Active += len(j.Transfers)
			var serr error
			if st != nil {
				serr = st.Err
			}
			m.log.WithField(FieldJob, j.ID).WithError(serr).Warn("no status for job this pass")
			continue
		}
		m.checkJob(j, st, now, t, &c)
	}
	m.setTransient(work, c.transients)
	return m.cancelKilled(work, c.kills, c.outs, t)
}

// checked is what check found: the terminal outcomes, the progress to
// record and the transfers to cancel.
type checked struct {
	outs       []outcome
	transients []state.Transient
	kills      []kill
}

// checkJob adds to c what the status st of job j says of its transfers.
func (m *monitor) checkJob(j state.Job, st *fts.JobStatus, now time.Time, t *tally, c *checked) {
	if st.Lost {
		reason := fmt.Sprintf("FTS job %s was lost (404 Not Found)", j.ID)
		if st.Gone {
			reason = fmt.Sprintf("FTS job %s was lost: %s (no attempt counted)", j.ID, st.Reason)
		}
		for i := range j.Transfers {
			// the destination is left alone (see outcome.deleteDest), and
			// first read (recorder.checkExisting)
			c.outs = append(c.outs, outcome{t: &j.Transfers[i], job: j.ID, outcome: state.OutcomeLost, reason: reason, gone: st.Gone})
		}
		return
	}
	files := make(map[string]int, len(st.Files))
	for i := range st.Files {
		files[st.Files[i].TransferID()] = i
	}
	for i := range j.Transfers {
		tr := &j.Transfers[i]
		k, ok := files[tr.ID]
		if !ok {
			if fts.TerminalJobState(st.State) {
				c.outs = append(c.outs, outcome{t: tr, job: j.ID, outcome: state.OutcomeLost,
					reason: fmt.Sprintf("FTS job %s has no file for this transfer", j.ID)})
			} else {
				t.ps.Active++
				t.ps.running++
			}
			continue
		}
		f := &st.Files[k]
		if o, done := fileOutcome(tr, j.ID, f); done {
			c.outs = append(c.outs, o)
			continue
		}
		t.ps.Active++
		t.ps.running++
		if tr.KillRequested {
			c.kills = append(c.kills, kill{t: tr, job: j.ID, fileID: f.FileID, running: urlCopyRan(f)})
		}
		if m.progressDue(tr, f, now) {
			c.transients = append(c.transients, state.Transient{Transfer: *tr, Progress: state.Progress{
				FTSState: f.State, Bytes: f.Filesize, Throughput: f.Throughput, Retries: f.Retry, Reason: f.Reason, FileID: f.FileID,
			}})
		}
	}
}

// fileOutcome maps a terminal FTS file state to the outcome to record.
func fileOutcome(t *state.Transfer, job string, f *fts.FileStatus) (outcome, bool) {
	o := outcome{t: t, job: job, reason: f.Reason}
	switch f.State {
	case "FINISHED":
		o.outcome, o.reason = state.OutcomeDone, ""
		return o, true
	case "CANCELED":
		if t.KillRequested {
			o.outcome, o.reason = state.OutcomeKilled, "killed by request: "+orDefault(f.Reason, "canceled in FTS")
			o.deleteDest = urlCopyRan(f)
			o.wrote = o.deleteDest
			return o, true
		}
		fallthrough
	case "FAILED", "NOT_USED":
		o.outcome = state.OutcomeFailed
		o.reason = orDefault(f.Reason, "FTS reported "+f.State+" without a reason")
		o.class, o.retryable, o.deleteDest, o.wrote = classify(f, o.reason)
		return o, true
	}
	return outcome{}, false
}

// urlCopyRan reports whether FTS ever started url-copy for f, so that its
// destination copy may be this transfer's doing: FTS sets start_time when
// it schedules the copy and clears it when it queues the file again for
// one of its own retries (which the retry count shows). A file cancelled
// before either left whatever is at its destination alone.
func urlCopyRan(f *fts.FileStatus) bool {
	return !f.StartTime.IsZero() || f.Retry > 0
}

// progressDue: record progress when FTS reports something new, or when the
// transfer was not touched for half the update window (so every active
// transfer is touched at least once per window).
func (m *monitor) progressDue(t *state.Transfer, f *fts.FileStatus, now time.Time) bool {
	p := t.Progress
	if p == nil || p.FTSState != f.State || p.Retries != f.Retry || p.Reason != f.Reason || t.FTSFileID != f.FileID {
		return true
	}
	return now.Sub(t.LastUpdate.Time) >= m.cfg.UpdateWindow/2
}

// setTransient records progress: best effort, never retried.
func (m *monitor) setTransient(work context.Context, items []state.Transient) {
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
	defer cancel()
	res, err := m.store.SetTransientState(ctx, items)
	if err != nil {
		m.log.WithError(err).Warn("recording progress failed")
		return
	}
	n := 0
	for _, r := range res {
		if r.Err == nil {
			n++
		}
	}
	m.metrics.count("progress", n)
}

// kill is a running transfer with kill_requested, to cancel in FTS.
type kill struct {
	t       *state.Transfer
	job     string
	fileID  int64
	running bool // url-copy had run for the file by this poll (urlCopyRan)
}

// cancelKilled cancels in FTS the running files of transfers with
// kill_requested (one request per job) and appends those FTS reports
// cancelled to outs as killed outcomes; the others are seen cancelled next
// pass. The destination of a file cancelled before FTS started url-copy
// for it is left alone (urlCopyRan): whatever is there is not its doing (it
// may be a file FTS would have refused to overwrite).
func (m *monitor) cancelKilled(work context.Context, kills []kill, outs []outcome, t *tally) []outcome {
	// kills are in job order: one request per run of the same job
	for len(kills) > 0 {
		n := 1
		for n < len(kills) && kills[n].job == kills[0].job {
			n++
		}
		job, ks := kills[0].job, kills[:n]
		kills = kills[n:]
		fids := make([]int64, len(ks))
		for i, k := range ks {
			fids[i] = k.fileID
		}
		ctx, cancel := context.WithTimeout(work, m.cfg.PhaseTimeout)
		f, err := m.eps.at(ctx, ks[0].t.FTSEndpoint)
		var states []string
		if err == nil {
			states, err = f.CancelFiles(ctx, job, fids)
		}
		cancel()
		log := m.log.WithField(FieldJob, job)
		if err != nil {
			t.fail("monitor", "cancelling killed transfers failed; retried next pass", err)
			continue
		}
		for i, k := range ks {
			log.WithField(FieldTransfer, k.t.ID).Info("kill requested: cancelled in FTS")
			if i < len(states) && states[i] == "CANCELED" {
				t.ps.Active--
				outs = append(outs, outcome{t: k.t, job: job, outcome: state.OutcomeKilled,
					reason: "killed by request: canceled in FTS", deleteDest: k.running, wrote: k.running})
			}
		}
	}
	return outs
}
