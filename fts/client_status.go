package fts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// statusFileFields are the file attributes asked with every status query.
const statusFileFields = "file_id,file_state,source_surl,dest_surl,reason,start_time,finish_time,filesize,throughput,retry,file_metadata,recoverable"

// JobStatus is the state of one FTS job. Lost means the server does not know
// the job (404: never submitted, or archived); Gone, beside Lost, that the
// server itself is gone with every job it held (the in-process simulator
// of an aso process that ended), so that nothing of the job runs any more;
// a server never answers it. Err is set when its state could not be learnt
// (the request failed, or the server refused it).
type JobStatus struct {
	JobID  string
	State  string
	Reason string
	Lost   bool
	Gone   bool
	Err    error
	Files  []FileStatus
}

// FileStatus is the state of one file of a job. Throughput is in MiB/s;
// Retry counts the retries done. Recoverable is FTS's verdict on a failure
// (whether another attempt can succeed), nil when the server sent none
// (older servers, or null).
type FileStatus struct {
	FileID      int64
	State       string
	SourceSURL  string
	DestSURL    string
	Reason      string
	StartTime   time.Time
	FinishTime  time.Time
	Filesize    int64
	Throughput  float64
	Retry       int
	Metadata    json.RawMessage
	Recoverable *bool
}

// TransferID returns the "transfer_id" of the file's metadata, or "". It
// accepts the metadata as a JSON object or as a string holding one.
func (f FileStatus) TransferID() string {
	meta := bytes.TrimSpace(f.Metadata)
	if len(meta) > 0 && meta[0] == '"' {
		var s string
		if json.Unmarshal(meta, &s) != nil {
			return ""
		}
		meta = []byte(s)
	}
	var m struct {
		TransferID flexString `json:"transfer_id"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return string(m.TransferID)
}

// Status returns the state of the given jobs, in input order. It asks for
// at most MaxJobsPerQuery jobs per request, each request under its own
// timeout. A job whose request failed gets Err; the others are still
// returned. The error return is only for bad input or a cancelled ctx.
func (c *Client) Status(ctx context.Context, jobIDs []string) ([]JobStatus, error) {
	if err := checkJobIDs(jobIDs); err != nil {
		return nil, fmt.Errorf("fts: status: %w", err)
	}
	out, err := inBatches(ctx, jobIDs, func(ids []string) []JobStatus { return c.statusChunk(ctx, ids) },
		func(st JobStatus) string { return st.JobID })
	if err != nil {
		return nil, fmt.Errorf("fts: status: %w", err)
	}
	return out, nil
}

// inBatches runs query on the distinct ids, at most MaxJobsPerQuery at a
// time, and returns its results (which key names) in the order of ids.
func inBatches[T any](ctx context.Context, ids []string, query func([]string) []T, key func(T) string) ([]T, error) {
	found := make(map[string]T, len(ids))
	for _, chunk := range chunks(unique(ids), MaxJobsPerQuery) {
		for _, res := range query(chunk) {
			found[key(res)] = res
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]T, len(ids))
	for i, id := range ids {
		out[i] = found[id]
	}
	return out, nil
}

// statusChunk queries one batch; it returns one JobStatus per id.
func (c *Client) statusChunk(ctx context.Context, ids []string) []JobStatus {
	r, err := c.send(ctx, request{
		method:     http.MethodGet,
		path:       "/jobs/" + joinIDs(ids),
		query:      "files=" + statusFileFields,
		idempotent: true,
	})
	if err != nil {
		return failAll(ids, fmt.Errorf("fts: status: %w", err))
	}
	// A single unknown id is answered 404 with the job's error entry; any
	// other error status (or a 404 without an entry: a wrong endpoint) is a
	// failure of the request, never a reason to call the jobs lost.
	parseable := r.status == http.StatusOK || r.status == http.StatusMultiStatus ||
		(len(ids) == 1 && r.status >= 400 && r.status < 500)
	if !parseable {
		return failAll(ids, fmt.Errorf("fts: status: %w", r.httpError()))
	}
	out, perr := parseStatusReply(r.body, ids)
	if perr == nil {
		return out
	}
	if len(ids) == 1 {
		if r.status >= 400 {
			return failAll(ids, fmt.Errorf("fts: status: %w", r.httpError()))
		}
		return failAll(ids, fmt.Errorf("fts: status: %w", perr))
	}
	// Ask one job at a time, so one unreadable entry spoils only itself.
	out = make([]JobStatus, 0, len(ids))
	for _, id := range ids {
		if ctx.Err() != nil {
			return append(out, failAll(ids[len(out):], ctx.Err())...)
		}
		out = append(out, c.statusChunk(ctx, []string{id})...)
	}
	return out
}

// parseStatusReply reads a status reply (one job object or an array of job
// objects and error entries) and returns one JobStatus per requested id, in
// order; an id the reply does not mention gets Err.
func parseStatusReply(body []byte, ids []string) ([]JobStatus, error) {
	entries, err := decodeEntries[wireJob](body)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]JobStatus, len(entries))
	for i, e := range entries {
		if e.JobID == "" {
			return nil, fmt.Errorf("status reply entry %d has no job_id", i)
		}
		byID[string(e.JobID)] = e.status()
	}
	out := make([]JobStatus, len(ids))
	for i, id := range ids {
		st, ok := byID[id]
		if !ok {
			st = JobStatus{JobID: id, Err: fmt.Errorf("fts: status: job %s missing from the server's reply", id)}
		}
		out[i] = st
	}
	return out, nil
}

// decodeEntries reads a JSON array of T, or a single T.
func decodeEntries[T any](body []byte) ([]T, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, errors.New("empty reply")
	}
	var entries []T
	switch body[0] {
	case '[':
		if err := json.Unmarshal(body, &entries); err != nil {
			return nil, fmt.Errorf("unreadable reply: %w", err)
		}
	case '{':
		var one T
		if err := json.Unmarshal(body, &one); err != nil {
			return nil, fmt.Errorf("unreadable reply: %w", err)
		}
		entries = []T{one}
	default:
		return nil, fmt.Errorf("unreadable reply: %s", clip(string(body)))
	}
	return entries, nil
}

func failAll(ids []string, err error) []JobStatus {
	out := make([]JobStatus, len(ids))
	for i, id := range ids {
		out[i] = JobStatus{JobID: id, Err: err}
	}
	return out
}

// checkJobIDs refuses ids that would change the meaning of the URL.
func checkJobIDs(ids []string) error {
	for i, id := range ids {
		if id == "" || strings.ContainsAny(id, ",/?#%; \t\r\n") {
			return fmt.Errorf("job id %d (%q) is empty or holds a reserved character", i, id)
		}
	}
	return nil
}

func joinIDs(ids []string) string {
	esc := make([]string, len(ids))
	for i, id := range ids {
		esc[i] = url.PathEscape(id)
	}
	return strings.Join(esc, ",")
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func chunks(ids []string, n int) [][]string {
	var out [][]string
	for len(ids) > n {
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}
