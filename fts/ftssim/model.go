package ftssim

import (
	"encoding/json"
	"time"
)

// File and job states (FTS3 model/file.py, model/job.py).
const (
	stateStaging       = "STAGING"
	stateSubmitted     = "SUBMITTED"
	stateReady         = "READY"
	stateActive        = "ACTIVE"
	stateFinished      = "FINISHED"
	stateFailed        = "FAILED"
	stateCanceled      = "CANCELED"
	stateNotUsed       = "NOT_USED"
	stateFinishedDirty = "FINISHEDDIRTY"
)

// Reasons FTS writes itself.
const (
	reasonUserCancel  = "Job canceled by the user"
	reasonQueueExpiry = "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"
	reasonJobFailed   = "One or more files failed. Please have a look at the details for more information"
)

// cancelGrace is how long after a cancellation the url-copy of a running
// file takes to die; until then its finish_time stays null, as in FTS.
const cancelGrace = time.Second

type job struct {
	id, sid          string
	unmanagedTokens  bool // params.unmanaged_tokens
	state, jobType   string
	reason           *string
	userDN, credID   string
	vo               string
	sourceSE, destSE *string
	submitTime       time.Time
	finished         *time.Time
	priority         int
	retry            int
	retryDelay       int
	canceled         bool
	overwrite        string // FTS overwrite letter, "" for none
	verifyChecksum   string // n, s, t or b
	bringOnline      int
	copyPinLifetime  int
	archiveTimeout   int
	expiry           *int64 // max_time_in_queue as an epoch
	metadata         any
	spaceToken       string
	sourceSpaceToken string
	internalParams   *string
	dstFileReport    bool
	targetQos        *string
	everActive       bool
	staging          bool // bring_online or copy_pin_lifetime: files start STAGING
	expired          bool // the max_time_in_queue expiry was applied
	files            []*file
}

type retryRow struct {
	attempt int
	at      time.Time
	reason  string
	host    string
}

type file struct {
	id                int64
	index             int
	job               *job
	state             string
	sourceSURL        string
	destSURL          string
	sourceSE, destSE  string
	reason            string
	reasonSet         bool // reason is NULL in FTS until first written
	recoverable       *bool
	filesize          int64
	userFilesize      int64
	checksum          string
	startTime         *time.Time
	finishTime        *time.Time
	txDuration        float64
	throughput        float64
	retry             int
	host              *string
	metadata          any
	activity          string
	selectionStrategy string
	hashedID          int
	scitag            any       // the submitted scitag, or nil
	srcToken          *TokenUse // the source's storage token, or nil
	dstToken          *TokenUse // the destination's storage token, or nil
	initialState      string    // file_state_initial: the state it entered in
	multiSource       bool      // its files[] entry has several sources

	stagingStart, stagingFinished *time.Time

	queuedAt  time.Time  // when the current attempt may leave SUBMITTED or STAGING
	readyAt   time.Time  // when it became READY
	activeAt  time.Time  // when it became ACTIVE
	attempt   int        // current attempt, from 0
	cancelAt  *time.Time // canceled while running: finish_time pending
	retryRows []retryRow
}

func isTerminal(state string) bool {
	return state == stateFinished || state == stateFailed || state == stateCanceled
}

func isJobTerminal(state string) bool {
	return isTerminal(state) || state == stateFinishedDirty
}

// isFileActive reports FTS's FileActiveStates among those simulated.
func isFileActive(state string) bool {
	return state == stateStaging || state == stateSubmitted || state == stateReady || state == stateActive
}

// entryState is the state a file enters the queue in.
func (j *job) entryState() string {
	if j.staging {
		return stateStaging
	}
	return stateSubmitted
}

func (f *file) running() bool { return f.state == stateReady || f.state == stateActive }

// expire cancels the queued files of a job still active at its
// max_time_in_queue (FTS cancelExpiredJobsForVo); running files go on.
func (j *job) expire(exp time.Time) {
	j.expired = true
	if isJobTerminal(j.state) {
		return
	}
	for _, f := range j.files {
		if f.state == stateStaging || f.state == stateSubmitted || f.state == stateNotUsed {
			at := exp
			f.state, f.reason, f.reasonSet, f.finishTime = stateCanceled, reasonQueueExpiry, true, &at
		}
	}
	j.aggregate()
}

func (f *file) nextEvent(o Options) time.Time {
	switch f.state {
	case stateStaging, stateSubmitted:
		return f.queuedAt.Add(o.QueueDelay)
	case stateReady:
		return f.readyAt.Add(o.StartDelay)
	default:
		if o.TransferTimeOf != nil {
			if d := o.TransferTimeOf(f.sourceSURL, f.destSURL); d > 0 {
				return f.activeAt.Add(d)
			}
		}
		return f.activeAt.Add(o.TransferTime)
	}
}

// maxRetries is FTS's getRetry: retry 0 means the server default, a
// negative retry none; multi-replica and multihop jobs are never retried.
func (j *job) maxRetries(serverDefault int) int {
	if j.jobType == "R" || j.jobType == "H" {
		return 0
	}
	switch {
	case j.retry == 0:
		return serverDefault
	case j.retry < 0:
		return 0
	}
	return j.retry
}

func (j *job) effectiveRetryDelay() time.Duration {
	if j.retryDelay <= 0 {
		return 120 * time.Second
	}
	return time.Duration(j.retryDelay) * time.Second
}

// afterTerminal activates what a terminal file unblocks: the next hop of a
// multihop job when a hop finished, the next replica when one failed.
func (f *file) afterTerminal(t time.Time) {
	j := f.job
	switch {
	case j.jobType == "H" && f.state == stateFinished:
		for _, n := range j.files {
			if n.index == f.index+1 && n.state == stateNotUsed {
				n.state, n.queuedAt = stateSubmitted, t
				return
			}
		}
	case j.jobType == "R" && f.state == stateFailed:
		for _, n := range j.files {
			if n.index == f.index && n.state == stateNotUsed {
				n.state, n.queuedAt = j.entryState(), t
				return
			}
		}
	}
}

// aggregate sets the job state from its files (FTS updateJobTransferStatus):
// ACTIVE once a file was scheduled; when no file is active any more, counted
// per file index, FINISHED, FINISHEDDIRTY, FAILED or CANCELED.
func (j *job) aggregate() {
	if isJobTerminal(j.state) {
		return
	}
	var last time.Time
	for _, f := range j.files {
		if isFileActive(f.state) {
			if j.everActive {
				j.state = stateActive
			}
			return
		}
		if f.finishTime != nil && f.finishTime.After(last) {
			last = *f.finishTime
		}
		if f.cancelAt != nil && f.cancelAt.After(last) {
			last = *f.cancelAt
		}
	}
	finished, failed, indexes := 0, 0, 0
	byIndex := map[int]string{}
	for _, f := range j.files {
		st, seen := byIndex[f.index]
		switch {
		case f.state == stateFinished:
			byIndex[f.index] = stateFinished
		case f.state == stateFailed && st != stateFinished:
			byIndex[f.index] = stateFailed
		case f.state == stateCanceled && !seen:
			byIndex[f.index] = stateCanceled
		}
	}
	for _, st := range byIndex {
		indexes++
		switch st {
		case stateFinished:
			finished++
		case stateFailed:
			failed++
		}
	}
	reason := ""
	switch {
	case finished == indexes:
		j.state = stateFinished
	case finished > 0 && failed > 0 && j.jobType != "H":
		j.state, reason = stateFinishedDirty, reasonJobFailed
	case failed > 0:
		j.state, reason = stateFailed, reasonJobFailed
	default:
		j.state = stateCanceled
		if j.expired {
			reason = reasonQueueExpiry
		}
	}
	j.reason = &reason
	j.finished = &last
}

// SimFile is one file the simulator received, as GET /sim/files lists it.
type SimFile struct {
	JobID       string    `json:"job_id"`
	SID         string    `json:"sid"`
	FileID      int64     `json:"file_id"`
	Source      string    `json:"source"`
	Destination string    `json:"destination"`
	State       string    `json:"state"`
	Reason      string    `json:"reason"`
	Submitted   time.Time `json:"submitted"`
	// Finished is when the file reached its terminal state (FTS
	// finish_time); nil while it is not terminal, and for a cancelled
	// running file until its url-copy has stopped.
	Finished *time.Time      `json:"finished,omitempty"`
	Retries  int             `json:"retries"`
	Metadata json.RawMessage `json:"metadata"`
	// Scitag is the file's scitag as submitted (nil: none).
	Scitag *int64 `json:"scitag"`
	// SourceToken and DestinationToken are the storage tokens the file
	// carried (their id and claims); UnmanagedTokens is the job's
	// unmanaged_tokens.
	SourceToken      *TokenUse `json:"source_token,omitempty"`
	DestinationToken *TokenUse `json:"destination_token,omitempty"`
	UnmanagedTokens  bool      `json:"unmanaged_tokens,omitempty"`
}

func (f *file) sim() SimFile {
	md, _ := json.Marshal(f.metadata)
	out := SimFile{
		JobID: f.job.id, SID: f.job.sid, FileID: f.id,
		Source: f.sourceSURL, Destination: f.destSURL,
		State: f.state, Reason: f.reason, Submitted: f.job.submitTime,
		Retries: f.retry, Metadata: md, Scitag: scitagValue(f.scitag),
		SourceToken: f.srcToken, DestinationToken: f.dstToken, UnmanagedTokens: f.job.unmanagedTokens,
	}
	if isTerminal(f.state) && f.finishTime != nil {
		at := *f.finishTime
		out.Finished = &at
	}
	return out
}
