package fts

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// wireJob is one job of a status or cancel reply as FTS writes it; fields
// may be strings, numbers or null (flexString and friends).
type wireJob struct {
	JobID       flexString `json:"job_id"`
	JobState    flexString `json:"job_state"`
	Reason      flexString `json:"reason"`
	HTTPStatus  flexString `json:"http_status"`
	HTTPMessage flexString `json:"http_message"`
	Files       []wireFile `json:"files"`
}

// wireFile is one file of a job's status reply.
type wireFile struct {
	FileID       flexInt         `json:"file_id"`
	FileState    flexString      `json:"file_state"`
	SourceSURL   flexString      `json:"source_surl"`
	DestSURL     flexString      `json:"dest_surl"`
	Reason       flexString      `json:"reason"`
	StartTime    ftsTime         `json:"start_time"`
	FinishTime   ftsTime         `json:"finish_time"`
	Filesize     flexInt         `json:"filesize"`
	Throughput   flexFloat       `json:"throughput"`
	Retry        flexInt         `json:"retry"`
	FileMetadata json.RawMessage `json:"file_metadata"`
	Recoverable  flexBool        `json:"recoverable"`
}

// status converts one reply entry.
func (e wireJob) status() JobStatus {
	st := JobStatus{JobID: string(e.JobID)}
	code := statusCode(string(e.HTTPStatus))
	switch {
	case code == http.StatusNotFound:
		st.Lost = true
		st.Reason = clip(string(e.HTTPMessage))
		return st
	case e.HTTPStatus != "" && (code < 200 || code > 299):
		if code == 0 {
			code = http.StatusBadGateway
		}
		st.Err = fmt.Errorf("fts: status of job %s: %w", st.JobID,
			&HTTPError{StatusCode: code, Message: clip(string(e.HTTPMessage))})
		return st
	case e.JobState == "":
		st.Err = fmt.Errorf("fts: status of job %s: reply has no job_state", st.JobID)
		return st
	}
	st.State = string(e.JobState)
	st.Reason = string(e.Reason)
	for _, f := range e.Files {
		st.Files = append(st.Files, FileStatus{
			FileID:      int64(f.FileID),
			State:       string(f.FileState),
			SourceSURL:  string(f.SourceSURL),
			DestSURL:    string(f.DestSURL),
			Reason:      string(f.Reason),
			StartTime:   f.StartTime.Time,
			FinishTime:  f.FinishTime.Time,
			Filesize:    int64(f.Filesize),
			Throughput:  float64(f.Throughput),
			Retry:       int(f.Retry),
			Metadata:    f.FileMetadata,
			Recoverable: f.Recoverable.ptr(),
		})
	}
	return st
}
