package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// jobsPerPass is how many full FTS jobs one pass fills before it moves on to
// monitoring: the number of jobs one bulk status request asks about.
const jobsPerPass = 100

// submitWorkers is how many FTS submissions are in flight at once. FTS
// takes a while to answer each (it stores every file); a few at a time
// hide that latency without loading the server.
const submitWorkers = 4

// maxUnprovenRefusals is how many jobs a run lets FTS refuse as malformed
// before FTS accepted any of the run's jobs: the next such refusal stops
// the run (see refused).
const maxUnprovenRefusals = 1

// submitter submits the held transfers to FTS exactly once: it writes each
// job's sid ahead (the ledger), sends the jobs, commits those FTS accepted,
// and keeps the jobs whose outcome is unknown pending until a lookup by
// sid settles them. It owns the rules of FTS's refusals (409, 400,
// credentials) and the memory they need.
type submitter struct {
	cfg     Config
	book    *ledger
	plan    *planner
	dests   destGate
	eps     *endpoints
	log     *logrus.Entry
	pending pendingJobs
	// solo are the transfers sent one per job for the rest of the run
	// (see destinationTaken); takes are the FTS endpoints that accepted a
	// job of this run, and unproven counts, by endpoint, the jobs it
	// refused as malformed before it accepted any (see refused).
	solo     map[string]bool
	takes    map[string]bool
	unproven map[string]int
	// fatal is set when the run must end with an error although ownership
	// is intact (FTS refused our credentials).
	fatal atomic.Pointer[error]
}

func newSubmitter(cfg Config, book *ledger, plan *planner, eps *endpoints, log *logrus.Entry) *submitter {
	return &submitter{cfg: cfg, book: book, plan: plan, dests: destGate{store: book.store}, eps: eps, log: log.WithField(FieldPhase, "submit"),
		pending: pendingJobs{}, solo: map[string]bool{}, takes: map[string]bool{}, unproven: map[string]int{}}
}

// checkFTS asks FTS who we are, so that unusable credentials stop the run
// before anything is touched.
func (s *submitter) checkFTS(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PhaseTimeout)
	defer cancel()
	if _, err := s.eps.own.VO(ctx); err != nil {
		return fmt.Errorf("FTS whoami: %w", err)
	}
	return nil
}

// fail ends the run after the current pass with err.
func (s *submitter) fail(err error) { s.fatal.CompareAndSwap(nil, &err) }

// failed returns the error the run must end with, or nil.
func (s *submitter) failed() error {
	if p := s.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// pendingJobs is the number of submissions whose outcome is not known.
func (s *submitter) pendingJobs() int { return len(s.pending) }

// submitHeld submits the held transfers that have no submission yet: all
// of them when all is set, otherwise only those that fill whole jobs. Held
// transfers that carry a sid no pending job knows (claimed again after a
// crash between submission and commit) join the pending job of their sid,
// to be looked up in FTS first.
func (s *submitter) submitHeld(stop, work context.Context, t *tally, all bool) {
	inPending := s.pending.holding()
	fresh, found := s.book.toSubmit(func(id string) bool { return inPending[id] })
	for _, tr := range found {
		p := s.pending[tr.SubmitSID]
		if p == nil {
			p = &pendingJob{job: job{prio: ftsPriority(tr.Priority)}, sid: tr.SubmitSID, endpoint: tr.FTSEndpoint}
			s.pending[tr.SubmitSID] = p
		}
		p.ids = append(p.ids, tr.ID)
		s.log.WithField(FieldTransfer, tr.ID).WithField("sid", tr.SubmitSID).Info("found a submission without commit; looking it up in FTS")
	}
	s.resolvePending(work, t)

	fresh = s.gate(work, fresh, t)
	jobs, aborts := s.plan.plan(fresh, s.solo)
	var batch []*pendingJob
	for _, j := range jobs {
		if all || len(j.files) == s.cfg.MaxFilesPerJob || len(j.files) == 1 && s.solo[j.files[0].id] {
			batch = append(batch, newPendingJob(j)) // short jobs are filled up by the next round
		}
	}
	s.submitJobs(stop, work, batch, t)
	s.abort(work, aborts, t)
	// 409s and failed commits found above are settled in the same pass
	s.resolvePending(work, t)
}

// submitJobs writes the sids of jobs ahead (one durable write for all of
// them), submits the jobs, and commits those FTS accepted. If stop comes
// first, the jobs are released at shutdown.
func (s *submitter) submitJobs(stop, work context.Context, jobs []*pendingJob, t *tally) {
	if len(jobs) == 0 || stop.Err() != nil || work.Err() != nil || s.failed() != nil {
		return
	}
	writes := make([]jobWrite, len(jobs))
	for k, j := range jobs {
		j.sid, j.endpoint = uuid.NewString(), s.cfg.FTSEndpoint
		writes[k] = j.write()
	}
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	now := s.cfg.Now()
	ok, lost, err := s.book.prepare(ctx, writes, now)
	cancel()
	t.lost("submit", lost)
	if err != nil {
		t.fail("submit", "writing submit_sid failed; the transfers stay claimed and are retried", err)
		return
	}
	var ready []*pendingJob
	for k, j := range jobs {
		if len(ok[k]) == 0 {
			continue
		}
		j.keep(ok[k])
		s.pending[j.sid] = j
		ready = append(ready, j)
	}
	ready = s.recheck(work, ready, state.At(now), t)
	if len(ready) > 0 {
		s.log.WithField("jobs", len(ready)).Info("submit_sid written; sending to FTS")
	}
	s.sendJobs(work, ready, t)
}

// sendJobs submits jobs whose sids are written, each to its endpoint, and
// commits those FTS accepted.
func (s *submitter) sendJobs(work context.Context, jobs []*pendingJob, t *tally) {
	var accepted []*pendingJob
	results := s.sendAll(work, jobs)
	for k, r := range results {
		if r.sent && r.unreachable == nil && r.err == nil {
			// FTS took a job of this batch: refusals of the batch are
			// judged knowing it, whatever order they are handled in
			s.takes[jobs[k].endpoint] = true
		}
	}
	for k, r := range results {
		switch {
		case !r.sent:
			// not sent (the run is stopping): it stays pending, and at
			// shutdown is looked up by sid and, never seen by FTS, sent
			// again or released; or the next agent does it
		case r.unreachable != nil:
			// the sid went to an endpoint out of reach: it stays pending
			t.ps.Errors++
			s.log.WithField("sid", jobs[k].sid).WithError(r.unreachable).Warn("cannot resubmit to the job's endpoint; retried next pass")
		case s.sent(work, jobs[k], r.jobID, r.err, t):
			accepted = append(accepted, jobs[k])
		}
	}
	s.commitJobs(work, accepted, t)
}

// sendResult is the answer of FTS to one submission.
type sendResult struct {
	sent        bool  // false: not sent (the run is stopping)
	unreachable error // the job's endpoint cannot be reached: not sent
	jobID       string
	err         error
}

// sendAll submits jobs to FTS, each to its endpoint, submitWorkers at a
// time, and returns FTS's answers in the order of jobs. Only the requests
// run concurrently: the submissions are built before and the answers
// handled after, in order, by the caller. Once the run is stopping, or
// FTS refused our credentials, no further job is sent: those have sent
// false.
func (s *submitter) sendAll(work context.Context, jobs []*pendingJob) []sendResult {
	subs := make([]fts.Submission, len(jobs))
	errs := make([]error, len(jobs))
	for k, j := range jobs {
		subs[k], errs[k] = s.plan.submission(work, j.job, j.sid, s.book.byID(j.ids))
	}
	out := make([]sendResult, len(jobs))
	var refused atomic.Bool
	var g errgroup.Group
	g.SetLimit(submitWorkers)
	for k := range jobs {
		if work.Err() != nil || s.failed() != nil || refused.Load() {
			break
		}
		if errs[k] != nil {
			out[k] = sendResult{sent: true, err: errs[k]}
			refused.Store(true)
			break
		}
		g.Go(func() error {
			if work.Err() != nil || s.failed() != nil || refused.Load() {
				return nil // judged once it has its slot: not sent
			}
			ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
			defer cancel()
			f, err := s.eps.at(ctx, jobs[k].endpoint)
			if err != nil {
				out[k] = sendResult{sent: true, unreachable: err}
				return nil
			}
			id, err := f.Submit(ctx, subs[k])
			if credentialError(err) {
				refused.Store(true)
			}
			out[k] = sendResult{sent: true, jobID: id, err: err}
			return nil
		})
	}
	_ = g.Wait() // each answer is in out
	return out
}

// sent handles FTS's answer to the submission of j and settles what it
// can. It reports whether FTS accepted the job, which the caller then
// commits.
func (s *submitter) sent(work context.Context, j *pendingJob, jobID string, err error, t *tally) bool {
	log := s.log.WithField("sid", j.sid)
	var dup *fts.DuplicateError
	j.conflict = ""
	switch {
	case err == nil:
		j.jobID = jobID
		s.takes[j.endpoint] = true
		log.WithField(FieldJob, jobID).WithField("files", len(j.ids)).Info("job submitted")
		return true
	case errors.As(err, &dup):
		// FTS already has this sid: adopt the job, never submit again;
		// unless it has no such job (see destinationTaken)
		j.jobID, j.conflict = dup.JobID, orDefault(dup.Message, "409 Conflict")
		log.WithField(FieldJob, dup.JobID).Info("sid already submitted; adopting the job")
	case errors.Is(err, ErrStopped) || errors.Is(err, state.ErrLockLost):
		// the write fence refused the submission: ownership is lost, and
		// nothing more is written; the job stays pending under its sid
		log.WithError(err).Warn("not submitted: ownership lost")
	case fts.IsTransient(err) || errors.Is(err, context.DeadlineExceeded):
		log.WithError(err).Warn("submission outcome unknown; will look the job up before any resubmission")
	case errors.Is(err, ErrStorageToken):
		log.WithError(err).Error("no storage token; stopping")
		s.releaseJob(work, j, "not submitted: "+err.Error(), t)
		s.fail(err)
	case credentialError(err):
		// not the transfers' fault: release them without penalty and stop
		log.WithError(err).Error("FTS refused our credentials; stopping")
		s.releaseJob(work, j, "FTS refused the credentials: "+err.Error(), t)
		s.fail(fmt.Errorf("FTS refused the credentials: %w", err))
	default:
		log.WithError(err).Error("FTS refused the submission")
		s.refused(work, j, err, t)
	}
	return false
}

// refused settles j, which FTS refused with err (neither a 409 nor a
// credential refusal). Its transfers are aborted: retried after the
// cool-off while attempts remain. A job FTS refuses as malformed (400: a
// URL or protocol it does not take) would be refused again, so it fails at
// once, once the same FTS has accepted a job of this run: until then the
// refusal may as well be the server's or aso's configuration (a server
// that refuses unmanaged tokens, say) and would fail every job alike, so
// the job's transfers are only retried; a second such refusal stops the
// run, releasing the rest of the claimed transfers without penalty.
func (s *submitter) refused(work context.Context, j *pendingJob, err error, t *tally) {
	bad := errors.Is(err, fts.ErrBadRequest)
	fatal := bad && s.takes[j.endpoint]
	class := ""
	if bad {
		class = string(state.ClassUnsupported)
	}
	reason := "FTS refused the submission: " + err.Error()
	if bad && !fatal {
		if s.unproven[j.endpoint]++; s.unproven[j.endpoint] > maxUnprovenRefusals {
			s.releaseJob(work, j, reason, t)
			s.fail(fmt.Errorf("FTS refused %d submissions of this run as malformed and accepted none: a server or configuration problem rather than the jobs'; stopping (%w)", s.unproven[j.endpoint], err))
			return
		}
		reason += " (retried: FTS accepted no job of this run yet, so the job may not be at fault)"
	}
	delete(s.pending, j.sid)
	ts := s.book.get(j.ids)
	aborts := make([]state.Abort, len(ts))
	for i, tr := range ts {
		aborts[i] = state.Abort{Transfer: tr, Reason: reason, Fatal: fatal, ErrorClass: class}
	}
	s.abort(work, aborts, t)
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

// commitJobs records the FTS jobs of jobs on their transfers, in one
// write, and counts what was committed. A job none of whose transfers is
// held any more is forgotten. After an error the jobs stay pending: they
// are known by their sids.
func (s *submitter) commitJobs(work context.Context, jobs []*pendingJob, t *tally) {
	if len(jobs) == 0 {
		return
	}
	writes := make([]jobWrite, len(jobs))
	for k, j := range jobs {
		writes[k] = j.write()
	}
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	defer cancel()
	ok, lost, err := s.book.commit(ctx, writes)
	if err != nil {
		t.fail("submit", fmt.Sprintf("commit of %d jobs failed; retried next pass (the jobs are known by their sids)", len(jobs)), err)
		return
	}
	// A transfer found no longer ours was claimed by another agent after
	// its sid was written: that agent adopts this same job by its sid, so
	// the job is not cancelled here.
	t.lost("submit", lost)
	for k, j := range jobs {
		delete(s.pending, j.sid)
		if len(ok[k]) == 0 {
			continue
		}
		for _, id := range ok[k] {
			delete(s.solo, id)
		}
		t.submitted(len(ok[k]))
	}
}

// abort ends held transfers without a job (aborts) and counts them.
func (s *submitter) abort(work context.Context, aborts []state.Abort, t *tally) {
	if len(aborts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	defer cancel()
	list, res, err := s.book.abort(ctx, aborts)
	if err != nil {
		t.fail("submit", "abort failed; the claims expire by themselves", err)
		return
	}
	t.aborted("submit", list, res)
}

// releaseJob forgets the pending job j, which FTS never accepted, and
// returns its transfers to new without penalty.
func (s *submitter) releaseJob(work context.Context, j *pendingJob, reason string, t *tally) {
	delete(s.pending, j.sid)
	ctx, cancel := context.WithTimeout(work, s.cfg.PhaseTimeout)
	defer cancel()
	res, err := s.book.release(ctx, j.ids, reason)
	t.released("submit", res, err)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
