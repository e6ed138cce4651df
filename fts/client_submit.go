package fts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// BaseID is the namespace of FTS deterministic job ids.
const BaseID = "01874efb-4735-4595-bc9c-591aef8240c9"

// DestinationUUID is the dest_surl_uuid FTS gives a single-source file
// writing to url, uuid5(BASE_ID, url): a server with fts3.CheckDuplicates
// keeps it unique among active files, and names it when it refuses a job
// as duplicated.
func DestinationUUID(url string) string {
	return uuid.NewSHA1(uuid.MustParse(BaseID), []byte(url)).String()
}

// Submission is the body of POST /jobs.
type Submission struct {
	Files  []SubmitFile `json:"files"`
	Params SubmitParams `json:"params"`
}

// SubmitFile is one transfer of a submission. Checksum reads "ADLER32:0a1b2c3d".
type SubmitFile struct {
	Sources      []string `json:"sources"`
	Destinations []string `json:"destinations"`
	Checksum     string   `json:"checksum,omitempty"`
	Filesize     int64    `json:"filesize,omitempty"`
	Metadata     any      `json:"metadata,omitempty"`
	Activity     string   `json:"activity,omitempty"`
	// Scitag marks the file's network flows: experiment << 6 | activity
	// (FTS takes 65..65535); 0 sends none.
	Scitag int `json:"scitag,omitempty"`
	// SourceTokens and DestinationTokens are the storage tokens of the
	// file, one per source and per destination URL (FTS refuses a file
	// with one list and not the other, or a list of another length). They
	// are secrets: never log a Submission.
	SourceTokens      []string `json:"source_tokens,omitempty"`
	DestinationTokens []string `json:"destination_tokens,omitempty"`
}

// Checksum verification modes (SubmitParams.VerifyChecksum). FTS stores
// the first letter; without a mode, a file given a checksum has its
// destination compared with it ("target").
const (
	VerifyBoth = "both" // source and destination, against each other and the given checksum
	VerifyNone = "none" // no comparison at all, whatever checksum is given
)

// SubmitParams are the job parameters of a submission. Zero values are left
// out, so the server applies its defaults (retry 0 = server default, -1 =
// none; priority 1..5, default 3). MaxTimeInQueue takes an s, m, h or d
// suffix ("20h"); a bare whole number is hours, and is sent as "Nh": the
// server reads hours only from a JSON number and no limit at all from a
// string without a suffix.
type SubmitParams struct {
	VerifyChecksum string `json:"verify_checksum,omitempty"` // VerifyBoth, VerifyNone, "" (the server's default)
	Overwrite      bool   `json:"overwrite,omitempty"`
	Retry          int    `json:"retry,omitempty"`
	RetryDelay     int    `json:"retry_delay,omitempty"`
	Priority       int    `json:"priority,omitempty"`
	MaxTimeInQueue string `json:"max_time_in_queue,omitempty"`
	JobMetadata    any    `json:"job_metadata,omitempty"`
	IDGenerator    string `json:"id_generator,omitempty"` // "deterministic" with SID
	SID            string `json:"sid,omitempty"`
	// UnmanagedTokens tells FTS (3.14+) not to exchange or refresh the
	// files' storage tokens: the client gives tokens that last the job.
	UnmanagedTokens bool `json:"unmanaged_tokens,omitempty"`
}

// JobIDFromSID returns the id FTS gives a job submitted with
// id_generator "deterministic" and this sid by a user of this VO.
func JobIDFromSID(vo, sid string) string {
	return jobIDFromSID(uuid.MustParse(BaseID), vo, sid)
}

func jobIDFromSID(base uuid.UUID, vo, sid string) string {
	return uuid.NewSHA1(uuid.NewSHA1(base, []byte(vo)), []byte(sid)).String()
}

// maxDelegations bounds the delegations one submission makes: the
// server's copy may expire again before the retry arrives (another client
// of the same user delegating a proxy that ends sooner, the server's own
// cleanup), and a 419 is a refusal the server did not act on.
const maxDelegations = 3

// Submit submits one job and returns its id. If the server asks for a
// delegation (419), the proxy is delegated and the submission retried, at
// most maxDelegations times.
// A duplicate sid (409) gives a *DuplicateError naming the existing job.
// Only failures where the server surely did not act are retried, so a
// submission without a sid is never made twice by this call.
func (c *Client) Submit(ctx context.Context, s Submission) (string, error) {
	if err := checkSubmission(s); err != nil {
		return "", fmt.Errorf("fts: submit: %w", err)
	}
	s.Params.MaxTimeInQueue = withUnit(s.Params.MaxTimeInQueue)
	body, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("fts: submit: encode: %w", err)
	}
	rq := request{method: http.MethodPost, path: "/jobs", body: body}
	r, err := c.send(ctx, rq)
	for n := 0; err == nil && r.status == 419 && c.proxy != nil && n < maxDelegations; n++ {
		if derr := c.delegate(ctx); derr != nil {
			return "", fmt.Errorf("fts: submit: the server asks for a delegation (%s): %w", r.httpError().Message, derr)
		}
		r, err = c.send(ctx, rq)
	}
	if err != nil {
		return "", fmt.Errorf("fts: submit: %w", err)
	}
	switch {
	case r.status == http.StatusConflict:
		return "", c.duplicate(ctx, s.Params.SID, r)
	case r.status < 200 || r.status > 299:
		return "", fmt.Errorf("fts: submit: %w", r.httpError())
	}
	var reply struct {
		JobID flexString `json:"job_id"`
	}
	if err := json.Unmarshal(r.body, &reply); err != nil || reply.JobID == "" {
		return "", fmt.Errorf("fts: submit: reply without a job id: %s", clip(string(r.body)))
	}
	return string(reply.JobID), nil
}

// withUnit returns a max_time_in_queue of bare digits as hours ("12" ->
// "12h"), other values as they are.
func withUnit(v string) string {
	if v != "" && strings.Trim(v, "0123456789") == "" {
		return v + "h"
	}
	return v
}

// duplicate builds the DuplicateError of a 409 reply. The job id is
// computed from the sid, with the namespace the server reports in whoami.
func (c *Client) duplicate(ctx context.Context, sid string, r *reply) error {
	e := &DuplicateError{SID: sid, Message: r.httpError().Message}
	if sid == "" {
		return e
	}
	w, err := c.whoami(ctx)
	if err != nil || len(w.VOs) == 0 {
		return e
	}
	base, perr := uuid.Parse(w.BaseID)
	if perr != nil {
		base = uuid.MustParse(BaseID)
	}
	e.JobID = jobIDFromSID(base, w.VOs[0], sid)
	return e
}

// checkSubmission refuses what the server would refuse with a vaguer message.
func checkSubmission(s Submission) error {
	if len(s.Files) == 0 {
		return errors.New("no files")
	}
	for i, f := range s.Files {
		if len(f.Sources) == 0 || len(f.Destinations) == 0 {
			return fmt.Errorf("file %d: needs at least one source and one destination", i)
		}
		for _, u := range append(append([]string(nil), f.Sources...), f.Destinations...) {
			if !strings.Contains(u, "://") {
				return fmt.Errorf("file %d: %q is not a URL", i, u)
			}
		}
		if (len(f.SourceTokens) > 0 || len(f.DestinationTokens) > 0) &&
			(len(f.SourceTokens) != len(f.Sources) || len(f.DestinationTokens) != len(f.Destinations)) {
			return fmt.Errorf("file %d: want one source token per source and one destination token per destination", i)
		}
		if f.Checksum != "" && !strings.Contains(f.Checksum, ":") {
			return fmt.Errorf("file %d: checksum %q: want ALGORITHM:value", i, f.Checksum)
		}
	}
	if (s.Params.IDGenerator == "deterministic") != (s.Params.SID != "") {
		return errors.New(`params: id_generator "deterministic" and sid go together`)
	}
	return nil
}
