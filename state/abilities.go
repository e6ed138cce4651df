package state

import (
	"context"
	"time"
)

// The optional abilities of a TransferState, each an interface a backend
// may implement beside the contract. A caller finds them with As, a type
// assertion that sees through decorators (Wrap).

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

// MultiSubmitter is an optional ability of a TransferState, found with
// As: the writes of several FTS jobs' submissions in one round trip.
// The results are per job, in the order of jobs, exactly as PrepareSubmit
// and SetTransferID would give them for each job alone; an error of the
// whole call means nothing is known to be written.
type MultiSubmitter interface {
	// PrepareSubmits is PrepareSubmit of every job, in one durable write.
	PrepareSubmits(ctx context.Context, jobs []PrepareJob) ([][]Result, error)
	// SetTransferIDs is SetTransferID of every job, in one durable write.
	SetTransferIDs(ctx context.Context, jobs []CommitJob) ([][]Result, error)
}

// Confirmer is an optional ability of a TransferState whose queries (views)
// may lag behind the agent's own writes, found with As: a
// CouchDB cluster builds views per shard copy, so a view may miss
// transfers the agent has just claimed or submitted. Before concluding that
// the queue has drained, the agent asks Unsettled, which reads the
// documents of the transfers this store claimed (by ID, from a quorum of
// replicas) and returns those still acquired or submitted, or back in the
// queue; transfers found terminal are forgotten.
type Confirmer interface {
	Unsettled(ctx context.Context) ([]Transfer, error)
}

// ActivePager is an optional ability of a TransferState, found with
// As: listing the active transfers of a user a few jobs at a time, so
// that an agent with many active transfers holds in memory only those of
// the jobs it is checking. ActiveTransfers returns all of them at once.
type ActivePager interface {
	// ActiveJobs lists the FTS jobs of user's submitted transfers, in the
	// order ActiveTransfers gives them (and with the same latitude for
	// another writer's jobs), each with its number of submitted transfers,
	// without the transfers themselves.
	ActiveJobs(ctx context.Context, user string) ([]JobRef, error)
	// ActiveTransfersOf returns the submitted transfers of user in the
	// given jobs, grouped and ordered within each job as ActiveTransfers
	// does, the jobs in the order given. A job with no submitted transfer
	// of user (any more) is left out; an unknown job is not an error.
	ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]Job, error)
}

// JobRef names an FTS job with active transfers: see ActivePager.
type JobRef struct {
	ID        string
	Transfers int
}

// PrepareOne is PrepareSubmit in terms of PrepareSubmits, for a backend
// that implements MultiSubmitter.
func PrepareOne(ctx context.Context, m MultiSubmitter, transfers []Transfer, sid string) ([]Result, error) {
	res, err := m.PrepareSubmits(ctx, []PrepareJob{{Transfers: transfers, SID: sid}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// CommitOne is SetTransferID in terms of SetTransferIDs, for a backend that
// implements MultiSubmitter.
func CommitOne(ctx context.Context, m MultiSubmitter, commits []Commit, jobID string) ([]Result, error) {
	res, err := m.SetTransferIDs(ctx, []CommitJob{{Commits: commits, JobID: jobID}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
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
