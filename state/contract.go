package state

import (
	"context"
	"time"
)

// Store is the contract between aso and a state backend: the calls the
// agent makes (AgentStore) and those of the commands (Admin), and nothing
// else. Every backend implements all of it; state/statetest states it as
// tests.
//
// Every call is bulk: one backend round trip (or a few) per batch, never
// one per transfer. Bulk writes return one Result per input item, in input
// order; an error as the second value means the whole call failed (the
// store could not be reached) and nothing can be assumed about the items.
// Every call honours ctx: a cancelled context returns ctx.Err() (wrapped).
type Store interface {
	AgentStore
	Admin
	// Close releases the backend's resources (files, connections).
	Close() error
}

// AgentStore is what an agent calls. A handle works for the agent identity
// and policy it was opened with (Config).
//
// Writes are revision-checked: an item carries the revision that was read.
// On a conflict the backend re-reads the document; if it is still this
// agent's and in the expected state the change is re-applied, otherwise the
// item fails with ErrLeaseLost and nothing is written to it.
type AgentStore interface {
	// NewTransfers claims up to r.Limit eligible transfers of the agent's
	// user (state new with retry_after passed and every dependency done,
	// or acquired with an expired lease) by writing owner and
	// lease_expires, and returns them with their new revisions. Claims are
	// compare-and-set: two agents never both get one transfer.
	//
	// Order: priority descending, then oldest last_update, then ID, within
	// a call. With r.MaxPerLink set, the links take turns within a
	// priority (SpreadOrder) and no link's claims plus r.Held[link] exceed
	// the cap; a transfer passed over for its link's cap stays new, and the
	// store may move it to the back of the queue (last_update now, the
	// order among those it moves kept). Between calls, for at most
	// StaleClaimWindow after a call that read the queue from its head, a
	// store may go on down the queue from where the last call stopped, as
	// long as enough due transfers remain there to fill the call: a
	// transfer queued or released meanwhile, even of a higher priority,
	// then waits until the window has passed or the rest of the queue runs
	// short, never longer.
	//
	// Eligible transfers that can never run are settled in the same write
	// and returned in Claimed.Settled, not claimed: a dependent of a failed
	// or killed transfer, one in a cycle of dependencies, or one whose
	// dependency is still unknown DependencyWait after its creation
	// becomes failed with a reason naming it; one with kill_requested
	// becomes killed; a queued document that does not validate becomes
	// failed with a reason naming the field.
	NewTransfers(ctx context.Context, r ClaimRequest) (Claimed, error)

	// PrepareSubmits writes, for each job, submit_sid and the FTS endpoint
	// on its claimed transfers (durable) before their FTS submission, and
	// renews their lease, in one write. The results are per job, in the
	// order of jobs. Items no longer held give ErrLeaseLost.
	PrepareSubmits(ctx context.Context, jobs []PrepareJob) ([][]Result, error)

	// SetTransferIDs commits each job: its transfers become submitted in
	// FTS job JobID, with their PFNs and file IDs, in one durable write.
	// The results are per job, in the order of jobs. Items no longer held
	// (lease expired and re-claimed, or not acquired) give ErrLeaseLost.
	SetTransferIDs(ctx context.Context, jobs []CommitJob) ([][]Result, error)

	// AbortTransfers ends the transaction without a job: each transfer goes
	// back to new with attempts+1 and retry_after = now + cool-off, or
	// becomes failed once attempts reach the maximum (or at once when
	// Fatal); NoPenalty sends it back at once without counting. Items no
	// longer held give ErrLeaseLost.
	AbortTransfers(ctx context.Context, aborts []Abort) ([]Result, error)

	// RenewLeases extends the lease of claimed transfers by the lease TTL.
	// Items no longer held give ErrLeaseLost.
	RenewLeases(ctx context.Context, transfers []Transfer) ([]Result, error)

	// SetTransientState records progress and last_update of submitted
	// transfers. It may be non-durable and is never retried; an item whose
	// stored revision moved on gives ErrConflict (or ErrLeaseLost when it is
	// no longer submitted).
	SetTransientState(ctx context.Context, items []Transient) ([]Result, error)

	// SetTerminalState persists outcomes: done, killed, failed (or back to
	// new after the cool-off for a Retryable failure while attempts
	// remain; lost goes back to new at once). Durable and idempotent: an
	// item already in the requested terminal state succeeds without a
	// write. An item whose stored fts_job differs from Terminal.FTSJob, or
	// that is in another terminal state, gives ErrLeaseLost and is not
	// written.
	SetTerminalState(ctx context.Context, outcomes []Terminal) ([]Result, error)

	// ActiveJobs lists the FTS jobs of user's submitted transfers, each
	// with its number of submitted transfers, jobs in a stable order
	// (oldest last_update first), without the transfers themselves. A job
	// of the handle's own user that another writer committed (or that this
	// handle could not keep track of) may be left out for at most
	// StaleClaimWindow after the handle's last claim from the head of the
	// queue.
	ActiveJobs(ctx context.Context, user string) ([]JobRef, error)

	// ActiveTransfersOf returns the submitted transfers of user in the
	// given jobs, the jobs in the order given, each job's transfers by FTS
	// file ID then ID (SortJob). A job with no submitted transfer of user
	// (any more) is left out; an unknown job is not an error.
	ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]Job, error)

	// TakeBack is called by the holder of the live run lock l of l.User,
	// which therefore knows that no other agent of that user is alive. The
	// acquired transfers of l.User whose owner is not l.Holder and whose
	// lease has not expired get an expired lease (now), so that the next
	// NewTransfers claims them, in one bulk write; each one's history says
	// whose claim was taken back. A transfer that carries a submit_sid
	// keeps it: its submission may have reached FTS, and the agent that
	// claims it looks the job up by its deterministic ID before anything
	// else. It returns the transfers taken back (as written), and fails
	// with ErrLockLost, writing nothing, if l is not the live lock.
	TakeBack(ctx context.Context, l Lock) ([]Transfer, error)

	// List returns the transfers matching f (see Admin). Transfers selected
	// by ID are read by ID, from a read quorum on a cluster, so they
	// include the caller's own confirmed writes; a listing by anything
	// else may lag behind writes on a cluster.
	List(ctx context.Context, f Filter) ([]Transfer, error)

	// AcquireLock takes the run lock of user for holder until now+ttl. It
	// returns a *LockedError (errors.Is ErrLocked) while another holder's
	// lock has not expired.
	AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (Lock, error)
	// RenewLock extends a held lock to now+ttl. ErrLockLost if the lock
	// expired and was taken by another holder, or was released.
	RenewLock(ctx context.Context, l Lock, ttl time.Duration) (Lock, error)
	// ReleaseLock frees the lock l (expire = 0) and, when run is not nil,
	// records run as the user's last run in the same write. l is checked
	// by its user and holder (its revision only saves a read), so an agent
	// that found the holder of a live lock dead (a *LockedError naming a
	// process gone from its host) releases it naming that holder before it
	// takes the lock. A lock no longer held by l.Holder (taken by another
	// holder, released, unlocked) is left alone, nothing is recorded, and
	// the error wraps ErrLockLost.
	ReleaseLock(ctx context.Context, l Lock, run *RunRecord) error

	// DestinationReader: the transfers that name destinations, read by
	// the agent's deletion rule before it deletes a destination copy.
	DestinationReader
}

// Admin is what the commands call beyond the agent's calls.
type Admin interface {
	// Enqueue stores valid requests as new transfers. A request whose ID is
	// already stored is AlreadyQueued (and left unchanged); an invalid one is
	// Rejected with a *ValidationError. One bad request never fails the batch.
	Enqueue(ctx context.Context, reqs []Request) ([]EnqueueResult, error)

	// Get returns one transfer; ErrNotFound if there is none.
	Get(ctx context.Context, id string) (Transfer, error)

	// List returns the transfers matching f, oldest created first (then by
	// ID), at most f.Limit of them, starting after f.After: a caller pages
	// through any number of transfers with bounded memory, one call per page.
	List(ctx context.Context, f Filter) ([]Transfer, error)

	// Summary counts transfers by state, link and user, and lists the oldest
	// waiting, stale submitted, stuck acquired and invalid documents.
	Summary(ctx context.Context, o SummaryOptions) (Summary, error)

	// Counts counts transfers by CountKey, with the oldest last_update of
	// each group, and the transfers finished since o.HoursSince by hour
	// and since o.MinutesSince by minute, by link and state: what
	// fleet-wide monitoring reads, in a bounded number of backend queries
	// whatever the number of users and transfers (an index, a view).
	Counts(ctx context.Context, o CountsOptions) (Counts, error)

	// RequestKill asks for transfers to be killed: a new one becomes killed
	// at once; an acquired or submitted one gets kill_requested and the agent
	// cancels it in FTS. Per item: ErrNotFound for an unknown ID, ErrTerminal
	// for a terminal transfer.
	RequestKill(ctx context.Context, ids []string) ([]Result, error)

	// Retry returns terminal transfers to new with attempts reset. Per item:
	// ErrNotFound for an unknown ID, ErrNotTerminal for an active one.
	Retry(ctx context.Context, ids []string) ([]Result, error)

	// RecordVerifications writes what verifications found into the
	// history of their transfers (VerifyOf: one entry each, replacing the
	// previous verification's), in one bulk write. Per item: ErrNotFound
	// for an unknown ID, ErrNotTerminal for a transfer that has not ended,
	// ErrInvalid for an unknown result.
	RecordVerifications(ctx context.Context, vs []Verification) ([]Result, error)

	// Purge removes the transfers o selects, archiving them first when
	// o.Archive is set, in a few bulk operations, and returns how many it
	// removed. A transfer that changed since it was read (retried by
	// `aso retry`) is left in place. After an error, some transfers may
	// have been removed (each of them archived first).
	Purge(ctx context.Context, o PurgeOptions) (int, error)

	// DueUsers returns every user with work due at now, in one backend
	// query (see UserDue), oldest Since first, then by name (SortDue).
	DueUsers(ctx context.Context, now time.Time) ([]UserDue, error)

	// UserWork returns user's transfers counted by state and, when some
	// of its work is due at now, its entry as DueUsers gives it, in one
	// backend query whose cost follows the user's transfers, not the
	// store's. On CouchDB it is a view read, without a read quorum: on a
	// cluster it may lag behind writes made through another node.
	UserWork(ctx context.Context, user string, now time.Time) (UserWork, error)

	// Locks returns the stored run locks of user, or of every user when
	// user is "", ordered by user.
	Locks(ctx context.Context, user string) ([]LockDoc, error)

	// Unlock releases the lock of user if holder still holds it (expired
	// or not), recording a last run of holder that ended now with exit
	// code -1 and note as its error. ErrLockLost if the lock is held by
	// someone else or not held at all (nothing is written).
	Unlock(ctx context.Context, user, holder, note string) error

	// PFNReader: the transfers that name PFNs, read by `aso rm` before it
	// deletes one.
	PFNReader
}

// ClaimRequest parameterises NewTransfers.
type ClaimRequest struct {
	// Limit bounds the transfers claimed.
	Limit int
	// MaxPerLink caps a link's transfers held by the caller: Held[link]
	// plus those claimed by the call never exceed it. 0: no cap, claims in
	// queue order.
	MaxPerLink int
	// Held counts the caller's transfers per link ("SRC->DST") that are
	// already acquired or submitted.
	Held map[string]int
}

// Claimed is what NewTransfers did.
type Claimed struct {
	// Transfers are the transfers claimed, with their new revisions.
	Transfers []Transfer
	// Settled are the transfers the call took out of the queue and ended
	// instead of claiming them, as written (state and reason).
	Settled []Transfer
	// End reports that the claim went through every due transfer of the
	// queue as it read it: a claim that returned Limit transfers need not
	// be followed by another at once. false says nothing.
	End bool
	// Contended counts the due transfers whose claim write lost to another
	// write, or could not be confirmed (a cluster's 202 that does not read
	// back as the document's only leaf): they may still be due, so the
	// queue has not drained.
	Contended int
}

// PrepareJob is the submit_sid write of one FTS job (PrepareSubmits).
type PrepareJob struct {
	Transfers []Transfer
	SID       string
	// Endpoint is the FTS server the job goes to, recorded on each
	// transfer (Transfer.FTSEndpoint) with the sid.
	Endpoint string
}

// Apply is Prepare of one of j's transfers, recording j's endpoint too.
func (j *PrepareJob) Apply(t *Transfer, a Agent, now time.Time, ttl time.Duration) error {
	if err := Prepare(t, a, j.SID, now, ttl); err != nil {
		return err
	}
	t.FTSEndpoint = j.Endpoint
	return nil
}

// CommitJob is the commit of one FTS job (SetTransferIDs).
type CommitJob struct {
	Commits []Commit
	JobID   string
}

// JobRef names an FTS job with active transfers: see ActiveJobs.
type JobRef struct {
	ID        string
	Transfers int
}

// SplitResults cuts the results of a call on the items of several jobs,
// concatenated in order, into one slice per job (sizes[i] items each).
func SplitResults(res []Result, sizes []int) [][]Result {
	out := make([][]Result, len(sizes))
	at := 0
	for i, n := range sizes {
		out[i] = res[at : at+n : at+n]
		at += n
	}
	return out
}

// Config binds a store handle to an agent identity, a policy and a clock.
// The command that runs an agent builds one and gives it to the store and
// to the agent alike.
type Config struct {
	Agent  Agent
	Policy Policy
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Clock returns c.Now, or time.Now when unset.
func (c Config) Clock() func() time.Time {
	if c.Now == nil {
		return time.Now
	}
	return c.Now
}
