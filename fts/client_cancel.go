package fts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

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
