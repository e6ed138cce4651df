package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// outcome is a terminal result found by the monitor phase, to be recorded.
type outcome struct {
	term state.Terminal
	// deleteDest: the destination copy must be deleted before recording
	// (a failed or cancelled transfer may have left a partial file). Never
	// for a lost job: nothing says that job wrote the file at the
	// destination, which may be somebody else's (FTS refuses to overwrite
	// it); if the lost job did leave a copy, the next submission fails
	// with "file exists" and says so.
	deleteDest bool
}

// monitorPhase queries FTS for every active job of the user in bulk, records
// progress of running transfers, cancels those with kill_requested, and
// returns the terminal outcomes.
func (a *Agent) monitorPhase(work context.Context, ps *PassStats) []outcome {
	log := a.log.WithField(FieldPhase, "monitor")
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	jobs, err := a.store.ActiveTransfers(ctx, a.cfg.User)
	cancel()
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("listing active transfers failed; retried next pass")
		return nil
	}
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	// the client bounds each request of 100 jobs by its own timeout; a batch
	// that times out comes back with Err set and is skipped this pass
	sts, err := a.fts.Status(work, ids)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("FTS status failed")
		return nil
	}
	byJob := make(map[string]fts.JobStatus, len(sts))
	for _, st := range sts {
		byJob[st.JobID] = st
	}
	now := a.cfg.Now()
	n := 0
	for _, j := range jobs {
		n += len(j.Transfers)
	}
	outs := make([]outcome, 0, n) // room for all: with fast transfers most end here
	var transients []state.Transient
	kills := map[string][]int64{}
	killed := map[int64]state.Transfer{}
	running := map[int64]bool{} // killed files that were ACTIVE at this poll
	for _, j := range jobs {
		st, ok := byJob[j.ID]
		if !ok || st.Err != nil {
			ps.Errors++
			ps.Active += len(j.Transfers)
			log.WithField(FieldJob, j.ID).WithError(st.Err).Warn("no status for job this pass")
			continue
		}
		if st.Lost {
			for _, t := range j.Transfers {
				// the destination is left alone (see outcome.deleteDest)
				outs = append(outs, outcome{
					term: state.Terminal{Transfer: t, Outcome: state.OutcomeLost, FTSJob: j.ID, Reason: fmt.Sprintf("FTS job %s was lost (404 Not Found)", j.ID)},
				})
			}
			continue
		}
		files := make(map[string]fts.FileStatus, len(st.Files))
		for _, f := range st.Files {
			files[f.TransferID()] = f
		}
		for _, t := range j.Transfers {
			f, ok := files[t.ID]
			if !ok {
				if fts.TerminalJobState(st.State) {
					outs = append(outs, outcome{term: state.Terminal{Transfer: t, Outcome: state.OutcomeLost, FTSJob: j.ID,
						Reason: fmt.Sprintf("FTS job %s has no file for this transfer", j.ID)}})
				} else {
					ps.Active++
				}
				continue
			}
			if o, done := fileOutcome(t, j.ID, f); done {
				outs = append(outs, o)
				continue
			}
			ps.Active++
			if t.KillRequested {
				kills[j.ID] = append(kills[j.ID], f.FileID)
				killed[f.FileID] = t
				running[f.FileID] = f.State == "ACTIVE"
			}
			if a.progressDue(&t, f, now) {
				transients = append(transients, state.Transient{Transfer: t, Progress: state.Progress{
					FTSState: f.State, Bytes: f.Filesize, Throughput: f.Throughput, Retries: f.Retry, Reason: f.Reason, FileID: f.FileID,
				}})
			}
		}
	}
	a.setTransient(work, transients, ps)
	outs = append(outs, a.cancelKilled(work, kills, killed, running, ps)...)
	return outs
}

// fileOutcome maps a terminal FTS file state to the outcome to record.
func fileOutcome(t state.Transfer, job string, f fts.FileStatus) (outcome, bool) {
	term := state.Terminal{Transfer: t, FTSJob: job, Reason: f.Reason}
	switch f.State {
	case "FINISHED":
		term.Outcome = state.OutcomeDone
		return outcome{term: term}, true
	case "CANCELED":
		if t.KillRequested {
			term.Outcome, term.Reason = state.OutcomeKilled, "killed by request: "+orDefault(f.Reason, "canceled in FTS")
			return outcome{term: term, deleteDest: true}, true
		}
		fallthrough
	case "FAILED", "NOT_USED":
		term.Outcome = state.OutcomeFailed
		term.Reason = orDefault(f.Reason, "FTS reported "+f.State+" without a reason")
		term.Retryable = Retryable(term.Reason)
		return outcome{term: term, deleteDest: ownsDestination(term.Reason)}, true
	}
	return outcome{}, false
}

// progressDue: record progress when FTS reports something new, or when the
// transfer was not touched for half the update window (so every active
// transfer is touched at least once per window).
func (a *Agent) progressDue(t *state.Transfer, f fts.FileStatus, now time.Time) bool {
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

// cancelKilled cancels in FTS the running files of transfers with
// kill_requested (one request per job) and returns those FTS reports
// cancelled as killed outcomes; the others are seen cancelled next pass.
// The destination of a file cancelled before it was ACTIVE is left alone:
// url-copy never ran for it, so whatever is there is not its doing (it may
// be a file FTS would have refused to overwrite).
func (a *Agent) cancelKilled(work context.Context, kills map[string][]int64, killed map[int64]state.Transfer, running map[int64]bool, ps *PassStats) []outcome {
	var outs []outcome
	for job, fids := range kills {
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		states, err := a.fts.CancelFiles(ctx, job, fids)
		cancel()
		log := a.log.WithField(FieldPhase, "monitor").WithField(FieldJob, job)
		if err != nil {
			ps.Errors++
			log.WithError(err).Error("cancelling killed transfers failed; retried next pass")
			continue
		}
		for i, fid := range fids {
			t := killed[fid]
			log.WithField(FieldTransfer, t.ID).Info("kill requested: cancelled in FTS")
			if i < len(states) && states[i] == "CANCELED" {
				ps.Active--
				outs = append(outs, outcome{term: state.Terminal{Transfer: t, Outcome: state.OutcomeKilled, FTSJob: job,
					Reason: "killed by request: canceled in FTS"}, deleteDest: running[fid]})
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
