package agent

import (
	"context"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// Store is what the agent needs of a state backend.
type Store = state.AgentStore

// FTS is what the agent needs of an FTS3 server (*fts.Client).
type FTS interface {
	VO(ctx context.Context) (string, error)
	Submit(ctx context.Context, s fts.Submission) (string, error)
	Status(ctx context.Context, jobIDs []string) ([]fts.JobStatus, error)
	CancelFiles(ctx context.Context, jobID string, fileIDs []int64) ([]string, error)
}

// Resolver maps a LFN at a site to its PFN (*srm.Sites). other is the site at
// the far end of the transfer, for catalogue rules with destination-match.
type Resolver interface {
	ResolveFor(site, lfn, other string) (string, error)
}

// Deleter deletes destination copies (*srm.Deleter); it refuses a target
// that names its transfer's source.
type Deleter interface {
	Delete(ctx context.Context, targets []srm.Target) ([]srm.DeleteResult, error)
}

// DestinationChecker reads the size of the file at a destination, and its
// adler32 checksum when the size is the one given or that is 0
// (*srm.Deleter, with gfal-stat and gfal-sum). A Deleter that is
// one is used to settle failures "destination exists" (see checkExisting);
// without one they stay failed.
type DestinationChecker interface {
	Check(ctx context.Context, url string, size int64) srm.Existing
}
