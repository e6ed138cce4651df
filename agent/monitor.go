package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// outcome is a terminal result found by the monitor phase, to be recorded.
// It points at the transfer in the group's listing instead of copying it:
// the group holds every transfer once, and the record phase copies only
// those it writes.
type outcome struct {
	t         *state.Transfer
	job       string
	outcome   state.Outcome
	reason    string
	retryable bool
	class     fts.ErrorClass // of a failure
	// deleteDest: the destination copy must be deleted before recording
	// (a failed or cancelled transfer may have left a partial file). Never
	// for a lost job: nothing says that job wrote the file at the
	// destination, which may be somebody else's (FTS refuses to overwrite
	// it); if the lost job did leave a copy, the next submission fails
	// with "file exists" and says so.
	deleteDest bool
	// existing: a failure "destination exists" whose file there is the
	// transfer's own, recorded done (see checkExisting)
	existing bool
}

// terminal is the SetTerminalState item of o.
func (o *outcome) terminal() state.Terminal {
	return state.Terminal{Transfer: *o.t, Outcome: o.outcome, Reason: o.reason, Retryable: o.retryable, ErrorClass: string(o.class), FTSJob: o.job}
}

// monitorPhase checks the user's active transfers in FTS and records their
// outcomes, one group of jobs at a time when the store can list them so
// (state.ActivePager): for each group it reads the group's transfers,
// queries FTS, records progress, cancels kills, deletes destinations and
// records outcomes, and lets the group go before the next, so the agent
// holds the transfers of one group at a time. Without the ability, every
// active transfer is one group. A group whose listing or status fails is
// skipped this pass (an error of the pass); the others go on. The time
// spent is added to ps.Monitor and ps.Record.
func (a *Agent) monitorPhase(work context.Context, ps *PassStats) {
	defer a.links.begin(ps)()
	if a.pager == nil {
		a.monitorGroup(work, ps, nil, func(ctx context.Context) ([]state.Job, error) {
			return a.store.ActiveTransfers(ctx, a.cfg.User)
		})
		return
	}
	start := a.cfg.Now()
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	refs, err := a.pager.ActiveJobs(ctx, a.cfg.User)
	cancel()
	ps.Monitor += a.cfg.Now().Sub(start)
	if err != nil {
		ps.Errors++
		a.log.WithField(FieldPhase, "monitor").WithError(err).Error("listing active jobs failed; retried next pass")
		return
	}
	for _, g := range groupJobs(refs, a.cfg.MonitorGroup, fts.MaxJobsPerQuery) {
		if work.Err() != nil {
			return // ownership lost: nothing more may be written
		}
		a.monitorGroup(work, ps, g, func(ctx context.Context) ([]state.Job, error) {
			return a.pager.ActiveTransfersOf(ctx, a.cfg.User, g)
		})
	}
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

// monitorGroup lists one group's transfers with list (under the phase
// timeout), checks them in FTS and records their outcomes. When the
// group's job IDs are known beforehand (ids), the agent's own endpoint is
// asked for their status while the transfers are read (earlyStatus).
func (a *Agent) monitorGroup(work context.Context, ps *PassStats, ids []string, list func(context.Context) ([]state.Job, error)) {
	start := a.cfg.Now()
	var early *earlyStatus
	if len(ids) > 0 {
		early = a.askEarly(work, ids)
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	jobs, err := list(ctx)
	cancel()
	if err != nil {
		early.wait()
		ps.Errors++
		ps.Monitor += a.cfg.Now().Sub(start)
		a.log.WithField(FieldPhase, "monitor").WithError(err).Error("listing active transfers failed; retried next pass")
		return
	}
	outs := a.check(work, jobs, ps, early)
	early.wait()
	a.links.observe(jobs, outs)
	mid := a.cfg.Now()
	ps.Monitor += mid.Sub(start)
	a.recordPhase(work, outs, ps)
	ps.Record += a.cfg.Now().Sub(mid)
}

// check queries FTS for jobs in bulk, records progress of running
// transfers, cancels those with kill_requested, and returns the terminal
// outcomes (pointing into jobs).
func (a *Agent) check(work context.Context, jobs []state.Job, ps *PassStats, early *earlyStatus) []outcome {
	if len(jobs) == 0 {
		return nil
	}
	log := a.log.WithField(FieldPhase, "monitor")
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	// the client bounds each request of 100 jobs by its own timeout; a batch
	// that times out comes back with Err set and is skipped this pass
	sts, err := a.statusAt(work, jobs, early)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("FTS status failed")
		return nil
	}
	byJob := make(map[string]*fts.JobStatus, len(sts))
	for i := range sts {
		byJob[sts[i].JobID] = &sts[i]
	}
	now := a.cfg.Now()
	n := 0
	for _, j := range jobs {
		n += len(j.Transfers)
	}
	c := checked{outs: make([]outcome, 0, n)} // room for all: with fast transfers most end here
	for _, j := range jobs {
		st := byJob[j.ID]
		if st == nil || st.Err != nil {
			ps.Errors++
			ps.Active += len(j.Transfers)
			var serr error
			if st != nil {
				serr = st.Err
			}
			log.WithField(FieldJob, j.ID).WithError(serr).Warn("no status for job this pass")
			continue
		}
		a.checkJob(j, st, now, ps, &c)
	}
	a.setTransient(work, c.transients, ps)
	return a.cancelKilled(work, c.kills, c.outs, ps)
}

// checked is what check found: the terminal outcomes, the progress to
// record and the transfers to cancel.
type checked struct {
	outs       []outcome
	transients []state.Transient
	kills      []kill
}

// checkJob adds to c what the status st of job j says of its transfers.
func (a *Agent) checkJob(j state.Job, st *fts.JobStatus, now time.Time, ps *PassStats, c *checked) {
	if st.Lost {
		for i := range j.Transfers {
			// the destination is left alone (see outcome.deleteDest)
			c.outs = append(c.outs, outcome{t: &j.Transfers[i], job: j.ID, outcome: state.OutcomeLost,
				reason: fmt.Sprintf("FTS job %s was lost (404 Not Found)", j.ID)})
		}
		return
	}
	files := make(map[string]int, len(st.Files))
	for i := range st.Files {
		files[st.Files[i].TransferID()] = i
	}
	for i := range j.Transfers {
		t := &j.Transfers[i]
		k, ok := files[t.ID]
		if !ok {
			if fts.TerminalJobState(st.State) {
				c.outs = append(c.outs, outcome{t: t, job: j.ID, outcome: state.OutcomeLost,
					reason: fmt.Sprintf("FTS job %s has no file for this transfer", j.ID)})
			} else {
				ps.Active++
				ps.running++
			}
			continue
		}
		f := &st.Files[k]
		if o, done := fileOutcome(t, j.ID, f); done {
			c.outs = append(c.outs, o)
			continue
		}
		ps.Active++
		ps.running++
		if t.KillRequested {
			c.kills = append(c.kills, kill{t: t, job: j.ID, fileID: f.FileID, running: urlCopyRan(f)})
		}
		if a.progressDue(t, f, now) {
			c.transients = append(c.transients, state.Transient{Transfer: *t, Progress: state.Progress{
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
			return o, true
		}
		fallthrough
	case "FAILED", "NOT_USED":
		o.outcome = state.OutcomeFailed
		o.reason = orDefault(f.Reason, "FTS reported "+f.State+" without a reason")
		o.class, o.retryable, o.deleteDest = classify(f, o.reason)
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
func (a *Agent) progressDue(t *state.Transfer, f *fts.FileStatus, now time.Time) bool {
	p := t.Progress
	if p == nil || p.FTSState != f.State || p.Retries != f.Retry || p.Reason != f.Reason || t.FTSFileID != f.FileID {
		return true
	}
	return now.Sub(t.LastUpdate.Time) >= a.cfg.UpdateWindow/2
}

func (a *Agent) setTransient(work context.Context, items []state.Transient, ps *PassStats) {
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	res, err := a.store.SetTransientState(ctx, items)
	if err != nil {
		// transient state is best effort: never retried
		a.log.WithField(FieldPhase, "monitor").WithError(err).Warn("recording progress failed")
		return
	}
	n := 0
	for _, r := range res {
		if r.Err == nil {
			n++
		}
	}
	a.metrics.count("progress", n)
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
func (a *Agent) cancelKilled(work context.Context, kills []kill, outs []outcome, ps *PassStats) []outcome {
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
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		f, err := a.ftsAt(ctx, ks[0].t.FTSEndpoint)
		var states []string
		if err == nil {
			states, err = f.CancelFiles(ctx, job, fids)
		}
		cancel()
		log := a.log.WithField(FieldPhase, "monitor").WithField(FieldJob, job)
		if err != nil {
			ps.Errors++
			log.WithError(err).Error("cancelling killed transfers failed; retried next pass")
			continue
		}
		for i, k := range ks {
			log.WithField(FieldTransfer, k.t.ID).Info("kill requested: cancelled in FTS")
			if i < len(states) && states[i] == "CANCELED" {
				ps.Active--
				outs = append(outs, outcome{t: k.t, job: job, outcome: state.OutcomeKilled,
					reason: "killed by request: canceled in FTS", deleteDest: k.running})
			}
		}
	}
	return outs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
