package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
)

// endpointName is the name a run records on the transfers it submits: the
// endpoint URL without a trailing slash, or, for the in-process simulator,
// "local:" and the UUID of the instance this run started (Open). An
// instance lives only as long as the process that started it, so a
// transfer naming any other was in a job that ended with its process.
func (o *FTSOptions) endpointName() string {
	if o.Endpoint == "local" {
		return o.instance
	}
	return strings.TrimRight(o.Endpoint, "/")
}

// openOther returns the agent's way to reach the endpoints of jobs
// submitted by earlier runs: with the same credentials and options as
// --fts. An in-process simulator other than this run's ("local", as
// older runs recorded it, or "local:UUID") ended with its process.
func (o *FTSOptions) openOther(g *Globals) func(context.Context, string) (agent.FTS, error) {
	return func(ctx context.Context, endpoint string) (agent.FTS, error) {
		if endpoint == "local" || strings.HasPrefix(endpoint, "local:") {
			return goneLocal{}, nil
		}
		other := *o
		other.Endpoint = endpoint
		c, _, err := other.Open(ctx, g) // a remote endpoint: nothing to close
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// errGoneLocal: the jobs of an earlier run's in-process simulator cannot be
// sent there again.
var errGoneLocal = errors.New("the in-process FTS simulator of an earlier run ended with it")

// goneLocal stands for the in-process simulator of an earlier run: its
// jobs are lost and gone with it (fts.JobStatus.Gone), so that their
// transfers go back to the queue without an attempt counted, to be
// submitted to --fts.
type goneLocal struct{}

func (goneLocal) VO(context.Context) (string, error) { return "local", nil }

func (goneLocal) Submit(context.Context, fts.Submission) (string, error) { return "", errGoneLocal }

func (goneLocal) Status(_ context.Context, ids []string) ([]fts.JobStatus, error) {
	out := make([]fts.JobStatus, len(ids))
	for i, id := range ids {
		out[i] = fts.JobStatus{JobID: id, Lost: true, Gone: true, Reason: errGoneLocal.Error()}
	}
	return out, nil
}

func (goneLocal) CancelFiles(context.Context, string, []int64) ([]string, error) {
	return nil, errGoneLocal
}
