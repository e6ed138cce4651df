package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
)

// endpointName is the name a run records on the transfers it submits: the
// endpoint URL without a trailing slash, or "local" for the in-process
// simulator (whose port changes with every run).
func (o *FTSOptions) endpointName() string {
	if o.Endpoint == "local" {
		return "local"
	}
	return strings.TrimRight(o.Endpoint, "/")
}

// openOther returns the agent's way to reach the endpoints of jobs
// submitted by earlier runs: with the same credentials and options as
// --fts; "local" is the in-process simulator of an earlier run, which
// ended with it.
func (o *FTSOptions) openOther(g *Globals) func(context.Context, string) (agent.FTS, error) {
	return func(ctx context.Context, endpoint string) (agent.FTS, error) {
		if endpoint == "local" {
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

// goneLocal stands for the in-process simulator of an earlier run: it knows
// no job any more, so its jobs are lost (and submitted again to --fts).
type goneLocal struct{}

func (goneLocal) VO(context.Context) (string, error) { return "local", nil }

func (goneLocal) Submit(context.Context, fts.Submission) (string, error) { return "", errGoneLocal }

func (goneLocal) Status(_ context.Context, ids []string) ([]fts.JobStatus, error) {
	out := make([]fts.JobStatus, len(ids))
	for i, id := range ids {
		out[i] = fts.JobStatus{JobID: id, Lost: true, Reason: errGoneLocal.Error()}
	}
	return out, nil
}

func (goneLocal) CancelFiles(context.Context, string, []int64) ([]string, error) {
	return nil, errGoneLocal
}
