package fts_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/fts"
)

func testSubmission(sid string) fts.Submission {
	return fts.Submission{
		Files: []fts.SubmitFile{{
			Sources:      []string{"davs://se.site-a.example/store/user/alice/f1.root"},
			Destinations: []string{"davs://se.site-b.example/store/user/alice/f1.root"},
			Checksum:     "ADLER32:0a1b2c3d", Filesize: 1024,
			Metadata: map[string]string{"transfer_id": "8d1e6f0c2b"}, Activity: "ASO",
		}},
		Params: fts.SubmitParams{VerifyChecksum: fts.VerifyBoth, Retry: 2, JobMetadata: map[string]string{"issuer": "aso"},
			IDGenerator: "deterministic", SID: sid},
	}
}

func TestSubmit(t *testing.T) {
	f := newFake(t)
	f.reply("POST /jobs", 200, shared(t, "submit.json"))
	c := f.proxyClient(t, nil)
	id, err := c.Submit(context.Background(), testSubmission("sid-1"))
	if err != nil {
		t.Fatal(err)
	}
	if id != jobShared {
		t.Errorf("job id = %q, want %q", id, jobShared)
	}
	req := f.requests("POST /jobs")[0]
	if got := req.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var body struct {
		Files  []map[string]any `json:"files"`
		Params map[string]any   `json:"params"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	params := body.Params
	for k, want := range map[string]any{"verify_checksum": "both", "retry": 2.0, "id_generator": "deterministic", "sid": "sid-1"} {
		if params[k] != want {
			t.Errorf("params.%s = %v, want %v", k, params[k], want)
		}
	}
	// Zero values are left to the server's defaults (priority 0 would be clamped to 1).
	for _, k := range []string{"priority", "overwrite", "retry_delay", "max_time_in_queue"} {
		if _, ok := params[k]; ok {
			t.Errorf("params.%s sent although zero", k)
		}
	}
	file := body.Files[0]
	if file["checksum"] != "ADLER32:0a1b2c3d" || file["filesize"] != 1024.0 || file["activity"] != "ASO" {
		t.Errorf("file = %v", file)
	}
}

func TestSubmit_Duplicate(t *testing.T) {
	f := newFake(t)
	f.reply("POST /jobs", http.StatusConflict, shared(t, "conflict_409.json"))
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	c := f.proxyClient(t, nil)
	_, err := c.Submit(context.Background(), testSubmission("sid-7"))
	var dup *fts.DuplicateError
	if !errors.As(err, &dup) || !errors.Is(err, fts.ErrDuplicate) {
		t.Fatalf("Submit: %v, want a *DuplicateError", err)
	}
	if got, want := dup.JobID, fts.JobIDFromSID("cms", "sid-7"); got != want {
		t.Errorf("duplicate job id = %q, want %q", got, want)
	}
	if dup.SID != "sid-7" || dup.Message != "The sid provided by the user is duplicated" {
		t.Errorf("duplicate = %+v", dup)
	}
	if !strings.Contains(err.Error(), "sid sid-7 already submitted as job "+dup.JobID) {
		t.Errorf("error reads %q", err)
	}
	if n := len(f.requests("POST /jobs")); n != 1 {
		t.Errorf("%d submissions, want 1", n)
	}
}

func TestJobIDFromSID(t *testing.T) {
	// uuid5(uuid5(BASE_ID, "cms"), "aso-sid-1"), as Python's uuid module computes it.
	if got, want := fts.JobIDFromSID("cms", "aso-sid-1"), "b8a4dcd6-8904-534b-b550-a5e55add2f32"; got != want {
		t.Errorf("JobIDFromSID = %s, want %s", got, want)
	}
	if fts.JobIDFromSID("cms", "a") == fts.JobIDFromSID("atlas", "a") {
		t.Error("the VO does not change the job id")
	}
}

func TestSubmit_Refused(t *testing.T) {
	f := newFake(t)
	f.reply("POST /jobs", http.StatusBadRequest, shared(t, "bad_request_400.json"))
	c := f.proxyClient(t, nil)
	_, err := c.Submit(context.Background(), testSubmission("sid-2"))
	if !errors.Is(err, fts.ErrBadRequest) || fts.IsTransient(err) ||
		!strings.Contains(err.Error(), "No transfers operations specified") {
		t.Fatalf("Submit: %v, want a permanent bad-request error with the server's message", err)
	}
	if n := len(f.requests("POST /jobs")); n != 1 {
		t.Errorf("%d submissions of a refused job, want 1", n)
	}
}

func TestSubmit_BadInput(t *testing.T) {
	c := newFake(t).proxyClient(t, nil)
	noFiles := testSubmission("s")
	noFiles.Files = nil
	noSID := testSubmission("")
	badURL := testSubmission("s")
	badURL.Files[0].Destinations = []string{"/store/user/alice/f1.root"}
	badSum := testSubmission("s")
	badSum.Files[0].Checksum = "0a1b2c3d"
	for name, s := range map[string]fts.Submission{"no files": noFiles, "deterministic without sid": noSID, "not a url": badURL, "checksum": badSum} {
		if _, err := c.Submit(context.Background(), s); err == nil {
			t.Errorf("%s: Submit accepted", name)
		}
	}
}
