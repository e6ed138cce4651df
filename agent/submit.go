package agent

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// planned is a transfer ready for submission, with its PFNs.
type planned struct {
	id, src, dst string
}

// pendingJob is a submission whose outcome is unknown (an ambiguous FTS
// error, or a commit that failed): it is resolved by looking the job up by
// its deterministic ID, and resubmitted with the same sid only if FTS has
// never seen it, so it is never submitted twice.
type pendingJob struct {
	sid      string
	endpoint string // the FTS server the sid goes to ("": the agent's own)
	jobID    string // known once FTS accepted it or answered 409
	ids      []string
	files    []planned // empty for jobs recovered from the store; resolved again when needed
	prio     int
	// found are the files of the job FTS has, by transfer ID, once it is
	// adopted from a status reply; nil for a job FTS just accepted.
	found map[string]fts.FileStatus
	// conflict is FTS's message when it answered the last submission with
	// 409, "" otherwise (see destinationTaken).
	conflict string
}

// jobKey groups transfers into FTS jobs: one link, one FTS priority; solo
// is the ID of a transfer sent in a job of its own (see destinationTaken).
type jobKey struct {
	src, dst string
	prio     int
	solo     string
}

// ftsPriority maps a transfer priority (any integer, 0 = normal) to FTS's 1..5 (3 = normal).
func ftsPriority(p int) int {
	return max(1, min(5, 3+p))
}

// jobsPerPass is how many full FTS jobs one pass fills before it moves on to
// monitoring: the number of jobs one bulk status request asks about.
const jobsPerPass = 100

// submitPhase claims in rounds of BatchSize. While claims come back full
// (more is waiting) it submits only full jobs of MaxFilesPerJob files and
// keeps the rest held for the next round, so jobs are not cut short by the
// batch size; it stops claiming once jobsPerPass jobs' worth of transfers
// were claimed this pass (so the monitor phase keeps its turn), and submits
// everything held once the queue has no more to give. The next round's
// claim runs while a full batch is submitted: the store reads and writes
// the next batch while FTS answers (FTS takes up to seconds per job), and
// the agent holds the claimed batch only when the submission is over, so
// that claims and submissions never touch the same transfers.
func (a *Agent) submitPhase(stop, work context.Context, ps *PassStats) {
	limit := max(a.cfg.BatchSize, jobsPerPass*a.cfg.MaxFilesPerJob)
	next := a.startClaim(stop, work)
	for next != nil {
		c := <-next
		next = nil
		full := a.claimed(c, ps)
		ps.more = full
		if !full {
			break
		}
		if ps.Claimed < limit {
			next = a.startClaim(stop, work)
		}
		a.submitHeld(stop, work, ps, false)
	}
	a.submitHeld(stop, work, ps, !ps.more)
	ps.Pending = a.book.npending()
}

// claimResult is the outcome of one claim; end: it saw the end of the
// queue.
type claimResult struct {
	ts  []state.Transfer
	end bool
	err error
}

// startClaim claims one batch in the background and returns where its
// result arrives, or nil when the run is stopping. Whatever a started claim
// returns is received and held, so that it is released at shutdown.
func (a *Agent) startClaim(stop, work context.Context) <-chan claimResult {
	if stop.Err() != nil || work.Err() != nil || a.failed() != nil {
		return nil
	}
	a.claimedAt = a.cfg.Now()
	claim := a.claimer()
	out := make(chan claimResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		defer cancel()
		ts, end, err := claim(ctx)
		out <- claimResult{ts, end, err}
	}()
	return out
}

// claimed holds a claimed batch and reports whether it came back full,
// short of the end of the queue.
func (a *Agent) claimed(c claimResult, ps *PassStats) bool {
	if c.err != nil {
		ps.Errors++
		a.log.WithField(FieldPhase, "submit").WithError(c.err).Error("claiming transfers failed; retrying next pass")
	}
	ps.Claimed += len(c.ts)
	a.metrics.count("claimed", len(c.ts))
	a.book.hold(c.ts)
	return c.err == nil && len(c.ts) == a.cfg.BatchSize && !c.end
}

// submitHeld submits the held transfers that have no submission yet: all
// of them when all is set, otherwise only those that fill whole jobs.
func (a *Agent) submitHeld(stop, work context.Context, ps *PassStats, all bool) {
	log := a.log.WithField(FieldPhase, "submit")
	fresh, found := a.book.toSubmit()
	for _, t := range found {
		log.WithField(FieldTransfer, t.ID).WithField("sid", t.SubmitSID).Info("found a submission without commit; looking it up in FTS")
	}

	a.resolvePending(work, ps)

	jobs, aborts := a.plan(fresh)
	var batch []*pendingJob
	for _, j := range jobs {
		if all || len(j.ids) == a.cfg.MaxFilesPerJob || len(j.ids) == 1 && a.solo[j.ids[0]] {
			batch = append(batch, j) // short jobs are filled up by the next round
		}
	}
	a.submitJobs(stop, work, batch, ps)
	a.abort(work, aborts, ps)
	// 409s and failed commits found above are settled in the same pass
	a.resolvePending(work, ps)
}

// plan groups transfers by link and priority, resolves their PFNs, and splits
// them into jobs of at most MaxFilesPerJob files.
func (a *Agent) plan(ts []state.Transfer) ([]*pendingJob, []state.Abort) {
	groups := map[jobKey][]planned{}
	var aborts []state.Abort
	for _, t := range ts {
		src, err := a.sites.ResolveFor(t.Source, t.SourceLFN, t.Destination)
		if err == nil {
			var dst string
			dst, err = a.sites.ResolveFor(t.Destination, t.DestinationLFN, t.Destination)
			if err == nil {
				k := jobKey{t.Source, t.Destination, ftsPriority(t.Priority), ""}
				if a.solo[t.ID] {
					k.solo = t.ID
				}
				groups[k] = append(groups[k], planned{id: t.ID, src: src, dst: dst})
				continue
			}
		}
		aborts = append(aborts, state.Abort{Transfer: t, Reason: "cannot resolve PFN: " + err.Error()})
	}
	keys := make([]jobKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].prio != keys[j].prio {
			return keys[i].prio > keys[j].prio
		}
		if keys[i].src != keys[j].src {
			return keys[i].src < keys[j].src
		}
		if keys[i].dst != keys[j].dst {
			return keys[i].dst < keys[j].dst
		}
		return keys[i].solo < keys[j].solo
	})
	var jobs []*pendingJob
	for _, k := range keys {
		g := groups[k]
		for len(g) > 0 {
			n := min(len(g), a.cfg.MaxFilesPerJob)
			j := &pendingJob{files: g[:n:n], prio: k.prio}
			for _, f := range j.files {
				j.ids = append(j.ids, f.id)
			}
			jobs = append(jobs, j)
			g = g[n:]
		}
	}
	return jobs, aborts
}

// submitJobs writes the sids of jobs ahead (one durable write for all of
// them; state.MultiOf makes it one per job for a store without the
// ability), submits the jobs, and commits those FTS accepted. If stop comes
// first, the jobs are released at shutdown.
func (a *Agent) submitJobs(stop, work context.Context, jobs []*pendingJob, ps *PassStats) {
	if len(jobs) == 0 || stop.Err() != nil || work.Err() != nil || a.failed() != nil {
		return
	}
	log := a.log.WithField(FieldPhase, "submit")
	for _, j := range jobs {
		j.sid, j.endpoint = uuid.NewString(), a.newEndpoint()
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	ready, lost, err := a.book.prepare(ctx, jobs)
	cancel()
	a.logLost(log, lost)
	if err != nil {
		ps.Errors++
		log.WithError(err).Error("writing submit_sid failed; the transfers stay claimed and are retried")
		return
	}
	if len(ready) > 0 {
		log.WithField("jobs", len(ready)).Info("submit_sid written; sending to FTS")
	}
	a.sendJobs(work, ready, ps)
}

// sendJobs submits jobs whose sids are written, each to its endpoint, and
// commits those FTS accepted.
func (a *Agent) sendJobs(work context.Context, jobs []*pendingJob, ps *PassStats) {
	var accepted []*pendingJob
	results := a.sendAll(work, jobs)
	for k, r := range results {
		if r.sent && r.unreachable == nil && r.err == nil {
			// FTS took a job of this batch: refusals of the batch are
			// judged knowing it, whatever order they are handled in
			a.takes[jobs[k].endpoint] = true
		}
	}
	for k, r := range results {
		switch {
		case !r.sent:
			// not sent: at shutdown the jobs are looked up by sid and, never
			// seen by FTS, sent again or released; or the next agent does it
			a.commitJobs(work, accepted, ps)
			return
		case r.unreachable != nil:
			// the sid went to an endpoint out of reach: it stays pending
			ps.Errors++
			a.log.WithField(FieldPhase, "submit").WithField("sid", jobs[k].sid).WithError(r.unreachable).Warn("cannot resubmit to the job's endpoint; retried next pass")
		case a.sent(work, jobs[k], r.jobID, r.err, ps):
			accepted = append(accepted, jobs[k])
		}
	}
	a.commitJobs(work, accepted, ps)
}

// submitWorkers is how many FTS submissions are in flight at once. FTS
// takes a while to answer each (it stores every file); a few at a time
// hide that latency without loading the server.
const submitWorkers = 4

// sendResult is the answer of FTS to one submission.
type sendResult struct {
	sent        bool  // false: not sent (the run is stopping)
	unreachable error // the job's endpoint cannot be reached: not sent
	jobID       string
	err         error
}

// sendAll submits jobs to FTS, each to its endpoint (ftsAt),
// submitWorkers at a time, and returns FTS's
// answers in the order of jobs. Only the requests run concurrently: the
// submissions are built before and the answers handled after, in order,
// by the caller. Once the run is stopping, or FTS refused our credentials,
// no further job is sent; those are the tail of the result, with sent false.
func (a *Agent) sendAll(work context.Context, jobs []*pendingJob) []sendResult {
	subs := make([]fts.Submission, len(jobs))
	errs := make([]error, len(jobs))
	for k, j := range jobs {
		subs[k], errs[k] = a.tokenSubmission(work, j)
	}
	out := make([]sendResult, len(jobs))
	var wg sync.WaitGroup
	var refused atomic.Bool
	slots := make(chan struct{}, submitWorkers)
	for k := range jobs {
		slots <- struct{}{}
		if work.Err() != nil || a.failed() != nil || refused.Load() {
			<-slots
			break
		}
		if errs[k] != nil {
			<-slots
			out[k] = sendResult{sent: true, err: errs[k]}
			refused.Store(true)
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
			defer cancel()
			f, err := a.ftsAt(ctx, jobs[k].endpoint)
			if err != nil {
				out[k] = sendResult{sent: true, unreachable: err}
				return
			}
			id, err := f.Submit(ctx, subs[k])
			if credentialError(err) {
				refused.Store(true)
			}
			out[k] = sendResult{sent: true, jobID: id, err: err}
		}()
	}
	wg.Wait()
	return out
}

// tokenSubmission is the submission of j with its storage tokens.
func (a *Agent) tokenSubmission(ctx context.Context, j *pendingJob) (fts.Submission, error) {
	toks, err := a.fileTokens(ctx, j)
	if err != nil {
		return fts.Submission{}, err
	}
	s := a.submission(j, toks)
	s.Params.UnmanagedTokens = a.cfg.UnmanagedTokens && len(toks) > 0
	return s, nil
}

func (a *Agent) submission(j *pendingJob, toks map[string][2]string) fts.Submission {
	verify := fts.VerifyNone
	if a.cfg.VerifyChecksum {
		verify = fts.VerifyBoth
	}
	s := fts.Submission{Params: fts.SubmitParams{
		VerifyChecksum: verify,
		Overwrite:      a.cfg.Overwrite,
		Retry:          a.cfg.FTSRetry,
		RetryDelay:     a.cfg.FTSRetryDelay,
		Priority:       j.prio,
		MaxTimeInQueue: a.cfg.MaxTimeInQueue,
		JobMetadata:    map[string]string{"issuer": "aso", "agent": a.cfg.Owner, "user": a.cfg.User},
		IDGenerator:    "deterministic",
		SID:            j.sid,
	}}
	held := a.book.byID(j.ids)
	s.Files = make([]fts.SubmitFile, 0, len(j.files))
	for _, f := range j.files {
		t, ok := held[f.id]
		if !ok {
			continue
		}
		sf := fts.SubmitFile{
			Sources: []string{f.src}, Destinations: []string{f.dst},
			Filesize: t.Size, Activity: a.cfg.Activity,
			Metadata: map[string]string{"transfer_id": t.ID, "user": t.User},
		}
		if ck := t.Checksum(); ck != "" {
			sf.Checksum = "ADLER32:" + ck
		}
		tk, has := toks[t.ID]
		a.markFile(&sf, t.Activity, tk, has)
		s.Files = append(s.Files, sf)
	}
	return s
}

// adopt commits j, a job found in FTS by its sid (j.found), after
// releasing its transfers that FTS does not have: they were never
// submitted.
func (a *Agent) adopt(work context.Context, j *pendingJob, ps *PassStats) {
	if strays := a.book.strays(j); len(strays) > 0 {
		ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
		res, err := a.book.release(ctx, strays, "not part of FTS job "+j.jobID)
		cancel()
		a.logResults("submit", "release", res, err)
		if err != nil {
			ps.Errors++
		}
	}
	a.commitJobs(work, []*pendingJob{j}, ps)
}

// commitJobs records the FTS jobs of jobs on their transfers, in one
// write, and counts what was committed.
func (a *Agent) commitJobs(work context.Context, jobs []*pendingJob, ps *PassStats) {
	if len(jobs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	done, err := a.book.commit(ctx, jobs)
	if err != nil {
		ps.Errors++
		a.log.WithField(FieldPhase, "submit").WithError(err).Errorf("commit of %d jobs failed; retried next pass (the jobs are known by their sids)", len(jobs))
		return
	}
	for _, c := range done {
		a.noteCommitted(c.links)
		ps.Submitted += len(c.links)
		ps.Jobs++
		a.metrics.count("submitted", len(c.links))
		// A transfer found no longer ours was claimed by another agent after its
		// sid was written: that agent adopts this same job by its sid, so the
		// job is not cancelled here.
		a.logLost(a.log.WithField(FieldPhase, "submit").WithField(FieldJob, c.job.jobID), c.lost)
	}
}

func filterPlanned(fs []planned, keep map[string]bool) []planned {
	out := fs[:0:0]
	for _, f := range fs {
		if keep[f.id] {
			out = append(out, f)
		}
	}
	return out
}

func (a *Agent) abort(work context.Context, aborts []state.Abort, ps *PassStats) {
	if len(aborts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	list, res, err := a.book.abort(ctx, aborts)
	if err != nil {
		ps.Errors++
		a.log.WithField(FieldPhase, "submit").WithError(err).Error("abort failed; the claims expire by themselves")
		return
	}
	for i, r := range res {
		l := a.log.WithField(FieldPhase, "submit").WithField(FieldTransfer, r.ID)
		if r.Err != nil {
			l.WithError(r.Err).Warn("abort not written")
		} else {
			l.WithField("reason", list[i].Reason).Info("transfer aborted")
			ps.Aborted++
		}
	}
	a.metrics.count("aborted", ps.Aborted)
}

func (a *Agent) logLost(log *logrus.Entry, lost []state.Result) {
	for _, r := range lost {
		log.WithField(FieldTransfer, r.ID).WithError(r.Err).Warn("transfer no longer ours; leaving it alone")
	}
}
