package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// sent handles FTS's answer to the submission of j and settles what it
// can. It reports whether FTS accepted the job, which the caller then
// commits.
func (a *Agent) sent(work context.Context, j *pendingJob, jobID string, err error, ps *PassStats) bool {
	log := a.log.WithField(FieldPhase, "submit").WithField("sid", j.sid)
	var dup *fts.DuplicateError
	j.conflict = ""
	switch {
	case err == nil:
		j.jobID = jobID
		a.takes[j.endpoint] = true
		log.WithField(FieldJob, jobID).WithField("files", len(j.ids)).Info("job submitted")
		return true
	case errors.As(err, &dup):
		// FTS already has this sid: adopt the job, never submit again;
		// unless it has no such job (see destinationTaken)
		j.jobID, j.conflict = dup.JobID, orDefault(dup.Message, "409 Conflict")
		log.WithField(FieldJob, dup.JobID).Info("sid already submitted; adopting the job")
	case fts.IsTransient(err) || errors.Is(err, context.DeadlineExceeded):
		log.WithError(err).Warn("submission outcome unknown; will look the job up before any resubmission")
	case errors.Is(err, ErrStorageToken):
		log.WithError(err).Error("no storage token; stopping")
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		a.releaseJob(ctx, j, "not submitted: "+err.Error(), ps)
		cancel()
		a.fail(err)
	case credentialError(err):
		// not the transfers' fault: release them without penalty and stop
		log.WithError(err).Error("FTS refused our credentials; stopping")
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		a.releaseJob(ctx, j, "FTS refused the credentials: "+err.Error(), ps)
		cancel()
		a.fail(fmt.Errorf("FTS refused the credentials: %w", err))
	default:
		log.WithError(err).Error("FTS refused the submission")
		a.refused(work, j, err, ps)
	}
	return false
}

// maxUnprovenRefusals is how many jobs a run lets FTS refuse as malformed
// before FTS accepted any of the run's jobs: the next such refusal stops
// the run (see refused).
const maxUnprovenRefusals = 1

// refused settles j, which FTS refused with err (neither a 409 nor a
// credential refusal). Its transfers are aborted: retried after the
// cool-off while attempts remain. A job FTS refuses as malformed (400: a
// URL or protocol it does not take) would be refused again, so it fails at
// once, once the same FTS has accepted a job of this run: until then the
// refusal may as well be the server's or aso's configuration (a server
// that refuses unmanaged tokens, say) and would fail every job alike, so
// the job's transfers are only retried; a second such refusal stops the
// run, releasing the rest of the claimed transfers without penalty.
func (a *Agent) refused(work context.Context, j *pendingJob, err error, ps *PassStats) {
	bad := errors.Is(err, fts.ErrBadRequest)
	fatal := bad && a.takes[j.endpoint]
	class := ""
	if bad {
		class = string(fts.ClassUnsupported)
	}
	reason := "FTS refused the submission: " + err.Error()
	if bad && !fatal {
		if a.unproven[j.endpoint]++; a.unproven[j.endpoint] > maxUnprovenRefusals {
			ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
			a.releaseJob(ctx, j, reason, ps)
			cancel()
			a.fail(fmt.Errorf("FTS refused %d submissions of this run as malformed and accepted none: a server or configuration problem rather than the jobs'; stopping (%w)", a.unproven[j.endpoint], err))
			return
		}
		reason += " (retried: FTS accepted no job of this run yet, so the job may not be at fault)"
	}
	a.book.forget(j.sid)
	ts := a.book.get(j.ids)
	aborts := make([]state.Abort, len(ts))
	for i, t := range ts {
		aborts[i] = state.Abort{Transfer: t, Reason: reason, Fatal: fatal, ErrorClass: class}
	}
	a.abort(work, aborts, ps)
}

// credentialError: FTS refused who we are (401, 403 other than a banned
// storage element, or delegation still missing after delegating): no
// transfer can succeed until an operator acts, so none is penalised.
func credentialError(err error) bool {
	switch {
	case errors.Is(err, fts.ErrUnauthorized), errors.Is(err, fts.ErrNeedDelegation), errors.Is(err, ErrStorageToken):
		return true
	case errors.Is(err, fts.ErrForbidden):
		return !strings.Contains(strings.ToLower(err.Error()), "banned")
	}
	return false
}
