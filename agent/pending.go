package agent

import (
	"context"
	"slices"

	"github.com/asyncstageout/aso/fts"
)

// resolvePending settles submissions whose outcome is unknown: it looks
// their jobs up by deterministic ID on the FTS endpoint each sid was
// submitted to (one bulk status request per 100 jobs). A job FTS has is
// adopted (committed); one FTS has never seen is submitted again with the
// same sid to the same endpoint, which would refuse it with 409 had the
// first submission reached it.
func (a *Agent) resolvePending(work context.Context, ps *PassStats) {
	if a.book.npending() == 0 || work.Err() != nil {
		return
	}
	endpoints, byEndpoint := a.pendingByEndpoint()
	for _, ep := range endpoints {
		a.resolvePendingAt(work, ep, byEndpoint[ep], ps)
	}
}

// resolvePendingAt is resolvePending of the pending jobs of one endpoint.
func (a *Agent) resolvePendingAt(work context.Context, endpoint string, pending []*pendingJob, ps *PassStats) {
	log := a.log.WithField(FieldPhase, "submit")
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	f, err := a.ftsAt(ctx, endpoint)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("pending submissions are retried next pass")
		return
	}
	vo, err := f.VO(ctx)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("FTS whoami failed; pending submissions are retried next pass")
		return
	}
	jobs := make([]*pendingJob, 0, len(pending))
	ids := make([]string, 0, len(pending))
	for _, p := range pending {
		if p.jobID == "" {
			p.jobID = fts.JobIDFromSID(vo, p.sid)
		}
		jobs = append(jobs, p)
		ids = append(ids, p.jobID)
	}
	sts, err := f.Status(ctx, ids)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("FTS status of pending submissions failed; retried next pass")
		return
	}
	for i, p := range jobs {
		if i >= len(sts) {
			break
		}
		st := sts[i]
		switch {
		case st.Err != nil:
			log.WithField(FieldJob, p.jobID).WithError(st.Err).Warn("pending submission still unknown")
		case st.Lost && a.failed() != nil:
			// the run is ending on an error (FTS refused our credentials):
			// FTS never saw the job, so its transfers are released without
			// penalty instead of being sent to be refused again
			a.releaseJob(ctx, p, "not submitted: "+a.failed().Error(), ps)
		case st.Lost && p.conflict != "":
			a.destinationTaken(work, p, ps)
		case st.Lost:
			if a.releaseKilled(ctx, p, ps) {
				a.resubmit(work, p, ps)
			}
		default:
			files := make(map[string]fts.FileStatus, len(st.Files))
			for _, f := range st.Files {
				files[f.TransferID()] = f
			}
			log.WithField(FieldJob, p.jobID).WithField("files", len(files)).Info("adopting job found by sid")
			p.found = files
			a.adopt(work, p, ps)
		}
	}
}

// releaseKilled releases without penalty the transfers of p, a job FTS
// has never seen, whose kill was requested meanwhile (FTS was not asked to
// run them: the next claim marks them killed), and takes them out of p. It
// reports whether p has transfers left to submit again.
func (a *Agent) releaseKilled(ctx context.Context, p *pendingJob, ps *PassStats) bool {
	var killed []string
	keep := p.ids[:0:0]
	for _, t := range a.book.get(p.ids) {
		if t.KillRequested {
			killed = append(killed, t.ID)
		} else {
			keep = append(keep, t.ID)
		}
	}
	if len(killed) == 0 {
		return true
	}
	res, err := a.book.release(ctx, killed, "kill requested; FTS never had the job "+p.jobID)
	a.logResults("submit", "release", res, err)
	if err != nil {
		ps.Errors++
	}
	if len(keep) == 0 {
		a.book.forget(p.sid)
		return false
	}
	p.keep(keep)
	return true
}

// keep takes out of p every transfer but those of ids.
func (p *pendingJob) keep(ids []string) {
	p.ids = ids
	files := p.files[:0:0]
	for _, f := range p.files {
		if slices.Contains(ids, f.id) {
			files = append(files, f)
		}
	}
	p.files = files
}

// resubmit sends a job FTS has never seen again, with the same sid.
func (a *Agent) resubmit(work context.Context, p *pendingJob, ps *PassStats) {
	if len(p.files) == 0 {
		// recovered from the store after a crash: resolve the PFNs again
		jobs, aborts := a.plan(a.book.get(p.ids))
		a.abort(work, aborts, ps)
		p.files = p.files[:0]
		p.ids = p.ids[:0]
		for _, j := range jobs {
			p.files = append(p.files, j.files...)
			p.ids = append(p.ids, j.ids...)
		}
		if len(p.ids) == 0 {
			a.book.forget(p.sid)
			return
		}
	}
	p.jobID, p.found = "", nil
	a.sendJobs(work, []*pendingJob{p}, ps)
}

// releaseJob forgets the pending job j, which FTS never accepted, and
// returns its transfers to new without penalty.
func (a *Agent) releaseJob(ctx context.Context, j *pendingJob, reason string, ps *PassStats) {
	a.book.forget(j.sid)
	res, err := a.book.release(ctx, j.ids, reason)
	a.logResults("submit", "release", res, err)
	if err != nil {
		ps.Errors++
	}
}

// retryPending is the last attempt, at shutdown, to settle pending jobs.
func (a *Agent) retryPending(ctx context.Context) {
	var ps PassStats
	a.resolvePending(ctx, &ps)
}
