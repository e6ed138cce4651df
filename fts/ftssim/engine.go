package ftssim

import (
	"fmt"
	"time"
)

// engine moves files through their states as time passes: the queue, the
// start, the transfer (a drawn failure, or a real copy of file:// URLs),
// retries, and what a terminal file unblocks. The jobTable's lock guards it.
type engine struct {
	opts        Options
	failureRate float64
}

// advance brings the job to the simulated time now: every file moves
// through the transitions whose time has come, then the job state is
// aggregated. Files are advanced in order, so a hop or replica activated by
// an earlier file is advanced in the same pass. A queue expiry within the
// period is applied at its own time.
func (e *engine) advance(j *job, now time.Time) {
	if j.expiry != nil && !j.expired {
		if exp := time.Unix(*j.expiry, 0).UTC(); !exp.After(now) {
			e.advanceFiles(j, exp)
			j.expire(exp)
		}
	}
	e.advanceFiles(j, now)
}

func (e *engine) advanceFiles(j *job, now time.Time) {
	for _, f := range j.files {
		e.advanceFile(f, now)
	}
	j.aggregate()
}

func (e *engine) advanceFile(f *file, now time.Time) {
	if f.cancelAt != nil && f.finishTime == nil && !now.Before(f.cancelAt.Add(cancelGrace)) {
		t := f.cancelAt.Add(cancelGrace)
		f.finishTime = &t
	}
	for !isTerminal(f.state) && f.state != stateNotUsed {
		next := f.nextEvent(e.opts)
		if next.After(now) {
			return
		}
		e.step(f, next)
	}
}

// step applies the transition due at t.
func (e *engine) step(f *file, t time.Time) {
	switch f.state {
	case stateStaging:
		start, end := f.queuedAt, t
		f.state, f.stagingStart, f.stagingFinished, f.queuedAt = stateSubmitted, &start, &end, t
	case stateSubmitted:
		f.state, f.readyAt, f.reason, f.reasonSet = stateReady, t, "", true
		start := t
		f.startTime = &start
		host := fmt.Sprintf("fts-sim-%02d.example.org", mix(uint64(e.opts.Seed), uint64(f.id))%3+1)
		f.host = &host
		f.job.everActive = true
	case stateReady:
		f.state, f.activeAt = stateActive, t
		// url-copy checks the source and the destination as it starts,
		// before it copies anything
		if e.opts.LocalFiles && isLocal(f.sourceSURL) && isLocal(f.destSURL) {
			if reason := checkLocal(f); reason != "" {
				end := t
				f.finishTime, f.txDuration = &end, 0
				e.fail(f, t, reason)
			}
		}
	case stateActive:
		e.finishAttempt(f, t)
	}
}

// finishAttempt ends the ACTIVE attempt at t: a drawn failure, or the real
// copy in LocalFiles mode, or success.
func (e *engine) finishAttempt(f *file, t time.Time) {
	h := mix(uint64(e.opts.Seed)^uint64(f.id)<<20, uint64(f.attempt)+1)
	local := e.opts.LocalFiles && isLocal(f.sourceSURL) && isLocal(f.destSURL)
	reason, copied := "", false
	if local {
		// url-copy checks the source and the destination before it copies
		// anything: a drawn transfer failure can only happen after that.
		reason = checkLocal(f)
	}
	if reason == "" && unit(h) < e.failureRate {
		reasons := e.opts.FailureReasons
		reason = reasons[mix(h, 7)%uint64(len(reasons))]
	} else if reason == "" && local {
		var size int64
		size, reason = copyLocal(f)
		copied = reason == ""
		f.filesize = size
	}
	tx := t.Sub(f.activeAt).Seconds()
	end := t
	f.finishTime = &end
	f.txDuration = tx
	if reason == "" {
		f.state = stateFinished
		size := f.filesize // the bytes really copied
		if !copied {
			size = f.userFilesize
		}
		if !copied && size <= 0 {
			size = int64(1<<20 + mix(h, 11)%(2<<30))
		}
		f.filesize = size
		if tx > 0 {
			f.throughput = float64(size) / (1 << 20) / tx
		}
		f.afterTerminal(t)
		return
	}
	e.fail(f, t, reason)
}

// fail records a failed attempt: retried later (back to SUBMITTED) when the
// reason is recoverable and retries are left, else FAILED, or CANCELED for
// ECANCELED.
func (e *engine) fail(f *file, t time.Time, reason string) {
	rec := Recoverable(reason)
	f.reason, f.reasonSet, f.recoverable = reason, true, &rec
	f.throughput = 0
	if rec && f.retry < f.job.maxRetries(e.opts.DefaultRetry) {
		host := ""
		if f.host != nil {
			host = *f.host
		}
		f.retryRows = append(f.retryRows, retryRow{attempt: f.retry + 1, at: t, reason: reason, host: host})
		f.retry++
		f.attempt++
		f.state = stateSubmitted
		f.startTime, f.finishTime, f.host = nil, nil, nil
		f.txDuration = 0
		f.queuedAt = t.Add(f.job.effectiveRetryDelay())
		return
	}
	f.state = stateFailed
	if errnoOf(reason) == errECANCELED {
		f.state = stateCanceled
	}
	f.afterTerminal(t)
}
