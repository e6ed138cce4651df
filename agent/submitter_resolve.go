package agent

import (
	"context"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// The submitter's pending jobs: how a submission whose outcome is not known
// is settled, by looking its job up in FTS by the job ID its sid derives.

// resolvePending settles submissions whose outcome is unknown: it looks
// their jobs up by deterministic ID on the FTS endpoint each sid was
// submitted to (one bulk status request per 100 jobs). A job FTS has is
// adopted (committed); one FTS has never seen is submitted again with the
// same sid to the same endpoint, which would refuse it with 409 had the
// first submission reached it; one on an FTS gone since (fts.JobStatus.Gone)
// is released without penalty, for a new submission.
func (s *submitter) resolvePending(work context.Context, t *tally) {
	if len(s.pending) == 0 || work.Err() != nil {
		return
	}
	endpoints, byEndpoint := s.pending.byEndpoint()
	for _, ep := range endpoints {
		s.resolvePendingAt(work, ep, byEndpoint[ep], t)
	}
}

// resolvePendingAt is resolvePending of the pending jobs of one endpoint.
func (s *submitter) resolvePendingAt(work context.Context, endpoint string, pending []*pendingJob, t *tally) {
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	defer cancel()
	f, err := s.eps.at(ctx, endpoint)
	if err != nil {
		t.fail("submit", "pending submissions are retried next pass", err)
		return
	}
	vo, err := f.VO(ctx)
	if err != nil {
		t.fail("submit", "FTS whoami failed; pending submissions are retried next pass", err)
		return
	}
	ids := make([]string, len(pending))
	for i, p := range pending {
		if p.jobID == "" {
			p.jobID = fts.JobIDFromSID(vo, p.sid)
		}
		ids[i] = p.jobID
	}
	sts, err := f.Status(ctx, ids)
	if err != nil {
		t.fail("submit", "FTS status of pending submissions failed; retried next pass", err)
		return
	}
	for i, p := range pending {
		if i >= len(sts) {
			break
		}
		s.resolved(work, p, sts[i], t)
	}
}

// resolved settles p by FTS's status st of its job.
func (s *submitter) resolved(work context.Context, p *pendingJob, st fts.JobStatus, t *tally) {
	switch {
	case st.Err != nil:
		s.log.WithField(FieldJob, p.jobID).WithError(st.Err).Warn("pending submission still unknown")
	case st.Lost && s.failed() != nil:
		// the run is ending on an error (FTS refused our credentials):
		// FTS never saw the job, so its transfers are released without
		// penalty instead of being sent to be refused again
		s.releaseJob(work, p, "not submitted: "+s.failed().Error(), t)
	case st.Gone:
		// the FTS that had the sid ended with the process that ran it (the
		// in-process simulator of an earlier run): whatever it took ended
		// too, and a stop is no attempt
		s.releaseJob(work, p, "FTS job "+p.jobID+" was lost: "+st.Reason, t)
	case st.Lost && p.conflict != "":
		s.destinationTaken(work, p, t)
	case st.Lost:
		if s.releaseKilled(work, p, t) {
			s.resubmit(work, p, t)
		}
	default:
		files := make(map[string]fts.FileStatus, len(st.Files))
		for _, f := range st.Files {
			files[f.TransferID()] = f
		}
		s.log.WithField(FieldJob, p.jobID).WithField("files", len(files)).Info("adopting job found by sid")
		p.found = files
		s.adopt(work, p, t)
	}
}

// adopt commits p, a job found in FTS by its sid (p.found), after
// releasing its transfers that FTS does not have: they were never
// submitted.
func (s *submitter) adopt(work context.Context, p *pendingJob, t *tally) {
	if strays := p.strays(); len(strays) > 0 {
		ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
		res, err := s.book.release(ctx, strays, "not part of FTS job "+p.jobID)
		cancel()
		t.released("submit", res, err)
	}
	s.commitJobs(work, []*pendingJob{p}, t)
}

// releaseKilled releases without penalty the transfers of p, a job FTS
// has never seen, whose kill was requested meanwhile (FTS was not asked to
// run them: the next claim marks them killed), and takes them out of p. It
// reports whether p has transfers left to submit again.
func (s *submitter) releaseKilled(work context.Context, p *pendingJob, t *tally) bool {
	var killed []string
	keep := p.ids[:0:0]
	for _, tr := range s.book.get(p.ids) {
		if tr.KillRequested {
			killed = append(killed, tr.ID)
		} else {
			keep = append(keep, tr.ID)
		}
	}
	if len(killed) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	res, err := s.book.release(ctx, killed, "kill requested; FTS never had the job "+p.jobID)
	cancel()
	t.released("submit", res, err)
	if len(keep) == 0 {
		delete(s.pending, p.sid)
		return false
	}
	p.keep(keep)
	return true
}

// resubmit sends a job FTS has never seen again, with the same sid.
func (s *submitter) resubmit(work context.Context, p *pendingJob, t *tally) {
	if len(p.files) == 0 {
		// recovered from the store after a crash: resolve the PFNs again
		jobs, aborts := s.plan.plan(s.book.get(p.ids), nil)
		s.abort(work, aborts, t)
		p.files, p.ids = p.files[:0], p.ids[:0]
		for _, j := range jobs {
			p.files = append(p.files, j.files...)
			p.ids = append(p.ids, idsOf(j.files)...)
		}
		if len(p.ids) == 0 {
			delete(s.pending, p.sid)
			return
		}
	}
	p.jobID, p.found = "", nil
	s.sendJobs(work, []*pendingJob{p}, t)
}

// destinationTaken settles p, a job FTS answered with 409 and then showed
// no job for its sid: not the 409 of a sid submitted before, but FTS's
// other one, "The submission is duplicated": a file of the job writes a
// destination that an active FTS file already writes (a server with
// fts3.CheckDuplicates), and FTS stored nothing. Transfers whose kill was
// requested meanwhile are released first (see releaseKilled).
//
// The file is the one whose destination's dest_surl_uuid the database's
// message names (pendingJob.collided): it fails, retried after the
// cool-off, by when the other file may have ended, and the rest of the job
// is sent again at once with the same sid (FTS stored none of it). When no
// file of the job has the UUID the message names (a message of another
// form, a job recovered from the store), the job's transfers are released
// without penalty and go one per job from then on in this run, as Rucio
// resubmits file by file, so that a busy destination holds back only its
// own transfer.
func (s *submitter) destinationTaken(work context.Context, p *pendingJob, t *tally) {
	if !s.releaseKilled(work, p, t) {
		return // all killed meanwhile: released, the next claim ends them
	}
	busy := p.collided()
	log := s.log.WithField("sid", p.sid)
	if len(busy) == 0 && len(p.ids) > 1 {
		for _, id := range p.ids {
			s.solo[id] = true
		}
		log.WithField("files", len(p.ids)).Warn("FTS refused the job as duplicated though it has no job with its sid; sending its files one per job")
		s.releaseJob(work, p, "FTS refused the job with 409 but has no job with its sid: a file of it writes the destination of an active FTS transfer; sent again one file per job: "+p.conflict, t)
		return
	}
	if len(busy) == 0 {
		busy = map[string]bool{p.ids[0]: true}
	}
	var aborts []state.Abort
	rest := p.ids[:0:0]
	for _, tr := range s.book.get(p.ids) {
		if busy[tr.ID] {
			aborts = append(aborts, state.Abort{Transfer: tr, Reason: "FTS refused the submission: another active FTS transfer writes this destination: " + p.conflict,
				ErrorClass: string(state.ClassDestinationBusy)})
		} else {
			rest = append(rest, tr.ID)
		}
	}
	if len(rest) == 0 {
		delete(s.pending, p.sid)
	}
	s.abort(work, aborts, t)
	if len(rest) > 0 {
		p.keep(rest)
		log.WithField("files", len(rest)).Info("FTS refused the job for a destination an active FTS transfer writes; sending the rest again")
		s.resubmit(work, p, t)
	}
}

// settlePending is the last attempt, at shutdown, to settle pending jobs.
func (s *submitter) settlePending(ctx context.Context, t *tally) {
	s.resolvePending(ctx, t)
}
