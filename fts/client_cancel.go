package fts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// CancelResult is the outcome of cancelling one job: State is the job's
// state afterwards (CANCELED, or the terminal state it already had, with
// Message "The job is in a terminal state"); Err is set if it could not be
// cancelled (unknown job: errors.Is(Err, ErrNotFound)).
type CancelResult struct {
	JobID   string
	State   string
	Message string
	Err     error
}

// Cancel cancels the given jobs (DELETE /jobs/a,b,c), at most
// MaxJobsPerQuery per request, and returns one result per id in input
// order. A job already terminal ("304 Not Modified") is a success. The
// error return is only for bad input or a cancelled ctx.
func (c *Client) Cancel(ctx context.Context, jobIDs []string) ([]CancelResult, error) {
	if err := checkJobIDs(jobIDs); err != nil {
		return nil, fmt.Errorf("fts: cancel: %w", err)
	}
	out, err := inBatches(ctx, jobIDs, func(ids []string) []CancelResult { return c.cancelChunk(ctx, ids) },
		func(r CancelResult) string { return r.JobID })
	if err != nil {
		return nil, fmt.Errorf("fts: cancel: %w", err)
	}
	return out, nil
}

func (c *Client) cancelChunk(ctx context.Context, ids []string) []CancelResult {
	fail := func(err error) []CancelResult {
		out := make([]CancelResult, len(ids))
		for i, id := range ids {
			out[i] = CancelResult{JobID: id, Err: err}
		}
		return out
	}
	r, err := c.send(ctx, request{method: http.MethodDelete, path: "/jobs/" + joinIDs(ids), idempotent: true})
	if err != nil {
		return fail(fmt.Errorf("fts: cancel: %w", err))
	}
	parseable := r.status == http.StatusOK || r.status == http.StatusMultiStatus ||
		(len(ids) == 1 && r.status >= 400 && r.status < 500)
	if !parseable {
		return fail(fmt.Errorf("fts: cancel: %w", r.httpError()))
	}
	entries, err := decodeEntries[wireJob](r.body)
	if err != nil {
		if r.status >= 400 {
			return fail(fmt.Errorf("fts: cancel: %w", r.httpError()))
		}
		return fail(fmt.Errorf("fts: cancel: %w", err))
	}
	byID := make(map[string]CancelResult, len(entries))
	for _, e := range entries {
		byID[string(e.JobID)] = e.cancelResult()
	}
	out := make([]CancelResult, len(ids))
	for i, id := range ids {
		res, ok := byID[id]
		if !ok {
			res = CancelResult{JobID: id, Err: fmt.Errorf("fts: cancel: job %s missing from the server's reply", id)}
		}
		out[i] = res
	}
	return out
}

// CancelFiles cancels files of one job (DELETE /jobs/{id}/files/{fids};
// the job must be a plain one, not multi-source or multihop) and returns
// each file's state afterwards, in input order: "CANCELED", the terminal
// state it already had, or "File does not belong to the job".
func (c *Client) CancelFiles(ctx context.Context, jobID string, fileIDs []int64) ([]string, error) {
	if err := checkJobIDs([]string{jobID}); err != nil {
		return nil, fmt.Errorf("fts: cancel files: %w", err)
	}
	if len(fileIDs) == 0 {
		return nil, fmt.Errorf("fts: cancel files of job %s: no file ids", jobID)
	}
	fids := make([]string, len(fileIDs))
	for i, id := range fileIDs {
		fids[i] = strconv.FormatInt(id, 10)
	}
	r, err := c.send(ctx, request{method: http.MethodDelete,
		path: "/jobs/" + joinIDs([]string{jobID}) + "/files/" + strings.Join(fids, ","), idempotent: true})
	if err != nil {
		return nil, fmt.Errorf("fts: cancel files of job %s: %w", jobID, err)
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("fts: cancel files of job %s: %w", jobID, r.httpError())
	}
	states, err := decodeStates(r.body)
	if err != nil {
		return nil, fmt.Errorf("fts: cancel files of job %s: %w", jobID, err)
	}
	if len(states) != len(fileIDs) {
		return nil, fmt.Errorf("fts: cancel files of job %s: %d states for %d files", jobID, len(states), len(fileIDs))
	}
	return states, nil
}

// decodeStates reads a JSON string or array of strings.
func decodeStates(body []byte) ([]string, error) {
	var states []string
	if err := json.Unmarshal(body, &states); err == nil {
		return states, nil
	}
	var one string
	if err := json.Unmarshal(body, &one); err != nil {
		return nil, fmt.Errorf("unreadable reply: %s", clip(string(body)))
	}
	return []string{one}, nil
}
