package agent

import (
	"context"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
)

// fencedFTS checks the write fence right before every action on FTS (a
// submission, a cancellation): an agent that lost its lock acts on nothing.
// Reads (status, whoami, delegation) pass through.
type fencedFTS struct {
	FTS
	k *keeper
}

func (f fencedFTS) Submit(ctx context.Context, sub fts.Submission) (string, error) {
	if err := f.k.mayWrite(); err != nil {
		return "", err
	}
	return f.FTS.Submit(ctx, sub)
}

func (f fencedFTS) CancelFiles(ctx context.Context, job string, fileIDs []int64) ([]string, error) {
	if err := f.k.mayWrite(); err != nil {
		return nil, err
	}
	return f.FTS.CancelFiles(ctx, job, fileIDs)
}

// fencedDeleter checks the write fence right before every gfal-rm: the
// destination copy of a transfer another agent retried since may be good.
type fencedDeleter struct {
	Deleter
	k *keeper
}

func (d fencedDeleter) Delete(ctx context.Context, targets []srm.Target) ([]srm.DeleteResult, error) {
	if err := d.k.mayWrite(); err != nil {
		return nil, err
	}
	return d.Deleter.Delete(ctx, targets)
}
