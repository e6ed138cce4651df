package state

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// StaleClaimWindow bounds how long NewTransfers may go on down a queue
// instead of reading it from its head (see AgentStore.NewTransfers).
const StaleClaimWindow = 30 * time.Second

// Defaults of Policy.
const (
	DefaultLeaseTTL    = 15 * time.Minute
	DefaultCoolOff     = 15 * time.Minute
	DefaultMaxAttempts = 3
)

// Policy is the retry and lease policy a backend applies. The zero value of
// each field means its default.
type Policy struct {
	LeaseTTL    time.Duration // how long a claim lasts without renewal
	CoolOff     time.Duration // delay before a failed or aborted transfer is eligible again
	MaxAttempts int           // attempts before a retryable failure becomes final
	// DependencyWait is how long a transfer waits, from its creation, for a
	// dependency that is not stored before it fails.
	DependencyWait time.Duration
}

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.LeaseTTL <= 0 {
		p.LeaseTTL = DefaultLeaseTTL
	}
	if p.CoolOff <= 0 {
		p.CoolOff = DefaultCoolOff
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.DependencyWait <= 0 {
		p.DependencyWait = DefaultDependencyWait
	}
	return p
}

// Agent identifies the caller of the agent-side calls: the user whose queue it
// works on and its owner ID (hostname:pid:random), written into claims.
type Agent struct {
	User  string
	Owner string
}

// Result is the outcome of one item of a bulk call, in the order of the input.
// Err is nil on success; otherwise it wraps one of the sentinel errors
// (ErrLeaseLost, ErrNotFound, ErrInvalid, ...). Rev is the new revision.
// On success, State and LeaseExpires are the transfer's state and lease as
// written (or as stored, when the item needed no write): a caller learns
// what the store's rules decided (a failure retried goes back to new, a
// final one becomes failed; a lease renewed until when) instead of
// deciding it again.
type Result struct {
	ID           string
	Rev          string
	Err          error
	State        State
	LeaseExpires Time
}

// Wrote returns the result of a successful write of item id: its new
// revision, state and lease as t shows them.
func Wrote(id, rev string, t *Transfer) Result {
	return Result{ID: id, Rev: rev, State: t.State, LeaseExpires: t.LeaseExpires}
}

// Commit is one item of SetTransferID: a claimed transfer, the PFNs it was
// submitted with, and its file ID in the FTS job.
type Commit struct {
	Transfer  Transfer
	SourcePFN string
	DestPFN   string
	FileID    int64
}

// Abort is one item of AbortTransfers.
type Abort struct {
	Transfer Transfer
	Reason   string
	// NoPenalty returns the transfer to new at once without counting an
	// attempt (used on shutdown for work claimed but not submitted).
	NoPenalty bool
	// Wait, with NoPenalty, returns it to new after the cool-off instead of
	// at once: it waits for something else (another transfer that owns its
	// destination), which Reason names.
	Wait bool
	// Disown, with NoPenalty, clears the transfer's record that it owns
	// its destination (DestOwnedSince): it recorded it in this pass and
	// yields the destination to another before FTS saw it (YieldTo).
	Disown bool
	// Fatal fails the transfer at once, whatever its attempts.
	Fatal bool
	// ErrorClass is the class of the failure when the caller knows one (a
	// submission FTS refused as malformed); it is stored beside Reason.
	ErrorClass string
}

// Transient is one item of SetTransientState.
type Transient struct {
	Transfer Transfer
	Progress Progress
}

// Outcome is the result FTS gave for a transfer.
type Outcome string

// Outcomes passed to SetTerminalState.
const (
	OutcomeDone   Outcome = "done"
	OutcomeFailed Outcome = "failed"
	OutcomeKilled Outcome = "killed"
	// OutcomeLost means FTS no longer knows the job: the transfer goes back to
	// new at once (no cool-off), counting an attempt (unless
	// Terminal.NoPenalty), so that a transfer whose jobs FTS keeps losing
	// fails after MaxAttempts instead of being submitted without end.
	OutcomeLost Outcome = "lost"
)

// Terminal is one item of SetTerminalState.
type Terminal struct {
	Transfer Transfer
	Outcome  Outcome
	Reason   string
	// Retryable marks a failure that may succeed later: the transfer returns
	// to new after the cool-off while attempts remain.
	Retryable bool
	// ErrorClass classifies Reason (ErrorClass) for a failed outcome.
	ErrorClass string
	// NoPenalty, with OutcomeLost, counts no attempt: the job ended with
	// the FTS server that held it, which a stop of aso ended (the
	// in-process simulator), not through anything of the transfer's.
	NoPenalty bool
	// FTSJob is the job the outcome came from. The outcome is applied only if
	// the stored transfer still points at this job (empty for a transfer that
	// was never submitted, e.g. a kill of an acquired one).
	FTSJob string
	// Notes are written into the transfer's history before the outcome:
	// what the agent did on the way to it (a deletion of the destination
	// copy and its result).
	Notes []string
	// DestCopy records what became of the copy the attempt may have left
	// at the destination (Transfer.DestWritten).
	DestCopy DestCopy
}

// Job groups the active transfers of one FTS job.
type Job struct {
	ID        string
	Transfers []Transfer
}

// SortJob puts the transfers of a job in the order ActiveTransfers gives
// them: by FTS file ID, then by ID.
func SortJob(ts []Transfer) {
	slices.SortFunc(ts, func(a, b Transfer) int {
		return cmp.Or(cmp.Compare(a.FTSFileID, b.FTSFileID), cmp.Compare(a.ID, b.ID))
	})
}

// Filter selects transfers for List. Zero fields select all; the fields
// that are set must all match.
type Filter struct {
	User   string
	States []State
	IDs    []string
	Link   string // "SRC->DST"
	Limit  int    // 0: no limit
	// IDPrefix selects the transfers whose ID starts with it.
	IDPrefix string
	// LFN selects by source or destination LFN: a glob (path.Match) when
	// it holds one of * ? [, else a prefix.
	LFN string
	// FTSJob selects the transfers last submitted in this FTS job.
	FTSJob string
	// Since selects the transfers whose last_update is at or after it.
	Since time.Time
	// ErrorClass selects the transfers whose last failure has this error
	// class; "unknown" also selects failed transfers that have none (see
	// FailureClass).
	ErrorClass string
	// Verified selects the transfers whose last verification found this
	// (Transfer.VerifiedAs).
	Verified VerifyResult
	// After pages: only the transfers that come after this key in the order
	// of List. Give the key of the last transfer of the previous page.
	After *ListKey
}

// ListKey is the position of a transfer in the order of List.
type ListKey struct {
	Created Time   `json:"created"`
	ID      string `json:"id"`
}

// KeyOf returns the position of t in the order of List.
func KeyOf(t *Transfer) ListKey { return ListKey{Created: t.Created, ID: t.ID} }

// EnqueueStatus tells what Enqueue did with one request.
type EnqueueStatus string

// Enqueue statuses.
const (
	Stored        EnqueueStatus = "stored"
	AlreadyQueued EnqueueStatus = "already queued"
	Rejected      EnqueueStatus = "rejected"
)

// EnqueueResult is the per-request result of Enqueue.
type EnqueueResult struct {
	ID     string
	Status EnqueueStatus
	Err    error // set when Status is Rejected
	// Owner is what the request met at its destination: a *OwnerError in
	// Err when it was refused for it.
	Owner OwnerCheck
	// OwnerErr is set when the request was stored and replaces or
	// supersedes Owner, but the record of it on the owner
	// (SupersedeOf) could not be written.
	OwnerErr error
}

// Summary is what `aso status` shows.
type Summary struct {
	Total   int                      `json:"total"`
	ByState map[State]int            `json:"by_state"`
	ByLink  map[string]map[State]int `json:"by_link"`
	ByUser  map[string]map[State]int `json:"by_user"`
	// ByErrorClass counts failed transfers by ErrorClass ("unknown" for
	// those without one).
	ByErrorClass  map[string]int `json:"by_error_class"`
	OldestWaiting *Transfer      `json:"oldest_waiting,omitempty"`
	Stale         []Transfer     `json:"stale"`
	StuckAcquired []Transfer     `json:"stuck_acquired"`
	Invalid       []InvalidDoc   `json:"invalid"`
	// Conflicted counts the documents with conflicting revisions (a
	// CouchDB cluster's replicas took concurrent writes) that no agent has
	// resolved yet; agents resolve those of their user when they read them.
	Conflicted int `json:"conflicted,omitempty"`
	// Superseded counts the documents an agent resolved whose set-aside
	// revisions are still stored, for `aso resolve-conflicts` to delete.
	Superseded int `json:"superseded,omitempty"`
}

// FailureClass is the key a failed transfer of error class class counts
// under in Summary.ByErrorClass.
func FailureClass(class string) string {
	if class == "" {
		return "unknown"
	}
	return class
}

// SummaryOptions parameterise Summary.
type SummaryOptions struct {
	User string
	// StaleAfter: a submitted transfer whose last_update is older than this is
	// reported stale (0: default 3 x 15 min).
	StaleAfter time.Duration
	// MaxListed bounds the Stale and StuckAcquired lists (0: 100).
	MaxListed int
	// Progress, if set, is told how many documents a summary of every
	// user (User "") has read so far, after each page of its read of the
	// whole store.
	Progress func(read int)
}

// Lock is a held per-user run lock.
type Lock struct {
	User   string
	Holder string
	Expire time.Time
	Rev    string

	// Since and LastRun are the lock document's (see LockDoc), carried so
	// that renewals keep them.
	Since   time.Time
	LastRun *RunRecord
}

// Matches reports whether t is selected by f (Limit aside). Backends use it
// so that every one of them filters alike.
func (f Filter) Matches(t *Transfer) bool {
	return (f.User == "" || t.User == f.User) &&
		(len(f.States) == 0 || slices.Contains(f.States, t.State)) &&
		(len(f.IDs) == 0 || slices.Contains(f.IDs, t.ID)) &&
		(f.Link == "" || t.Link() == f.Link) &&
		strings.HasPrefix(t.ID, f.IDPrefix) &&
		(f.LFN == "" || MatchLFN(f.LFN, t.SourceLFN) || MatchLFN(f.LFN, t.DestinationLFN)) &&
		(f.FTSJob == "" || t.FTSJob == f.FTSJob) &&
		(f.ErrorClass == "" || t.ErrorClass == f.ErrorClass || (t.State == StateFailed && FailureClass(t.ErrorClass) == f.ErrorClass)) &&
		(f.Since.IsZero() || !t.LastUpdate.Before(f.Since)) &&
		(f.Verified == "" || t.VerifiedAs() == f.Verified) &&
		(f.After == nil || f.After.Before(t))
}

// Before reports whether the transfer at k comes before t in the order of List.
func (k ListKey) Before(t *Transfer) bool {
	a := Transfer{Created: k.Created, ID: k.ID}
	return ListLess(&a, t)
}

// MatchLFN reports whether lfn is selected by pattern: a glob (path.Match,
// where * does not cross a /) when pattern holds one of * ? [, else a
// prefix. A malformed glob matches nothing: see ValidLFNPattern.
func MatchLFN(pattern, lfn string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return strings.HasPrefix(lfn, pattern)
	}
	ok, err := path.Match(pattern, lfn)
	return ok && err == nil
}

// ValidLFNPattern returns an error if pattern is a malformed glob.
func ValidLFNPattern(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("LFN pattern %q: %w", pattern, err)
	}
	return nil
}

// ListLess is the order of List: oldest created first, then ID.
func ListLess(a, b *Transfer) bool {
	if !a.Created.Equal(b.Created.Time) {
		return a.Created.Before(b.Created.Time)
	}
	return a.ID < b.ID
}

// Defaults of SummaryOptions.
const (
	DefaultStaleAfter = 3 * 15 * time.Minute // three update windows
	DefaultMaxListed  = 100
)

// WithDefaults returns o with every zero field set to its default.
func (o SummaryOptions) WithDefaults() SummaryOptions {
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.MaxListed <= 0 {
		o.MaxListed = DefaultMaxListed
	}
	return o
}
