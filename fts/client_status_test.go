package fts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
)

const (
	jobActive = "a40b82e4-a8d0-11ee-9d3c-fa163e2b6bd2"
	jobLost   = "00000000-0000-0000-0000-000000000000"
	jobOther  = "c5d7e0aa-a8d0-11ee-9d3c-fa163e2b6bd2"
	// jobShared is the job of the shared golden replies (testdata/fts).
	jobShared = "a3c1b3a2-6c5e-11ef-9c4e-fa163e1c2f3b"
)

func TestStatus_Bulk207(t *testing.T) {
	f := newFake(t)
	f.reply("GET /jobs/"+jobOther+","+jobLost+","+jobActive, http.StatusMultiStatus, golden(t, "status_207.json"))
	c := f.proxyClient(t, nil)
	sts, err := c.Status(context.Background(), []string{jobOther, jobLost, jobActive})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 3 {
		t.Fatalf("got %d statuses, want 3", len(sts))
	}
	// Input order, whatever the order of the reply.
	for i, id := range []string{jobOther, jobLost, jobActive} {
		if sts[i].JobID != id {
			t.Errorf("status %d is job %s, want %s", i, sts[i].JobID, id)
		}
	}
	if st := sts[0]; !errors.Is(st.Err, fts.ErrForbidden) || st.Lost || !strings.Contains(st.Err.Error(), "Not enough permissions") {
		t.Errorf("forbidden job: %+v, want Err wrapping ErrForbidden with the server's message", st)
	}
	if st := sts[1]; !st.Lost || st.Err != nil {
		t.Errorf("unknown job: %+v, want Lost without Err", st)
	}
	st := sts[2]
	if st.Err != nil || st.Lost || st.State != "ACTIVE" || len(st.Files) != 1 {
		t.Fatalf("active job: %+v", st)
	}
	if got, want := st.Files[0].TransferID(), "t1"; got != want {
		t.Errorf("TransferID = %q, want %q", got, want)
	}
	req := f.requests("GET /jobs/" + jobOther + "," + jobLost + "," + jobActive)[0]
	if want := "files=file_id,file_state,source_surl,dest_surl,reason,start_time,finish_time,filesize,throughput,retry,file_metadata,recoverable"; req.Query != want {
		t.Errorf("query = %q, want %q", req.Query, want)
	}
}

func TestStatus_SingleJobFields(t *testing.T) {
	f := newFake(t)
	f.reply("GET /jobs/"+jobActive, 200, golden(t, "status_job.json"))
	c := f.proxyClient(t, nil)
	sts, err := c.Status(context.Background(), []string{jobActive})
	if err != nil || len(sts) != 1 || sts[0].Err != nil {
		t.Fatalf("Status: %v %+v", err, sts)
	}
	st := sts[0]
	if st.State != "FINISHEDDIRTY" || !strings.HasPrefix(st.Reason, "One or more files failed") {
		t.Errorf("job = %q %q", st.State, st.Reason)
	}
	if len(st.Files) != 3 {
		t.Fatalf("%d files, want 3", len(st.Files))
	}
	f1, f2, f3 := st.Files[0], st.Files[1], st.Files[2]
	if f1.FileID != 1001 || f1.State != "FINISHED" || f1.Filesize != 104857600 || f1.Throughput != 1.5 ||
		f1.DestSURL != "davs://se.site-b.example/store/user/alice/f1.root" || f1.TransferID() != "8d1e6f0c2b" {
		t.Errorf("file 1 = %+v", f1)
	}
	if want := time.Date(2024, 1, 2, 3, 5, 0, 0, time.UTC); !f1.StartTime.Equal(want) || f1.StartTime.Location() != time.UTC {
		t.Errorf("start time = %v, want %v (naive UTC)", f1.StartTime, want)
	}
	if got := f1.FinishTime.Sub(f1.StartTime); got != 100*time.Second {
		t.Errorf("duration = %v, want 100s", got)
	}
	if f2.State != "FAILED" || f2.Retry != 2 || f2.Filesize != 0 || f2.TransferID() != "77aa01" ||
		!strings.Contains(f2.Reason, "overwrite is not enabled") {
		t.Errorf("file 2 (null numbers, metadata as a string) = %+v", f2)
	}
	if !f3.StartTime.IsZero() || !f3.FinishTime.IsZero() || f3.Reason != "" || f3.TransferID() != "" {
		t.Errorf("file 3 (null times and reason, no transfer id) = %+v", f3)
	}
}

func TestStatus_SingleLostOrWrongEndpoint(t *testing.T) {
	f := newFake(t)
	f.reply("GET /jobs/"+jobLost, 404, shared(t, "not_found.json"))
	c := f.proxyClient(t, nil)
	sts, err := c.Status(context.Background(), []string{jobLost, "1234-not-routed"})
	if err != nil {
		t.Fatal(err)
	}
	// The two ids went in one request, which the fake does not route: its
	// HTML 404 must not make the jobs lost.
	for _, st := range sts {
		if st.Lost || !errors.Is(st.Err, fts.ErrNotFound) || !strings.Contains(st.Err.Error(), "requested URL was not found") {
			t.Errorf("job %s behind a 404 page: %+v, want Err (not Lost) with the page's message", st.JobID, st)
		}
	}
	sts, err = c.Status(context.Background(), []string{jobLost})
	if err != nil {
		t.Fatal(err)
	}
	if !sts[0].Lost || sts[0].Err != nil || !strings.Contains(sts[0].Reason, "has been found") {
		t.Errorf("single unknown job: %+v, want Lost", sts[0])
	}
}

// jobsHandler answers GET /jobs/<ids> with one ACTIVE job per id, or with
// fail(ids) when that returns a status.
func jobsHandler(t testing.TB, fail func(ids []string) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ids := strings.Split(strings.TrimPrefix(r.URL.Path, "/jobs/"), ",")
		if code := fail(ids); code != 0 {
			w.WriteHeader(code)
			_, _ = w.Write(golden(t, "error_503.html"))
			return
		}
		var out []map[string]any
		for _, id := range ids {
			out = append(out, map[string]any{"job_id": id, "job_state": "ACTIVE", "http_status": "200 Ok", "files": []any{}})
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

func TestStatus_Batches(t *testing.T) {
	f := newFake(t)
	failing := "job-0150"
	f.handle("GET /jobs/*", jobsHandler(t, func(ids []string) int {
		for _, id := range ids {
			if id == failing {
				return http.StatusInternalServerError
			}
		}
		return 0
	}))
	c := f.proxyClient(t, func(cfg *fts.Config) { cfg.MaxElapsed = 50 * time.Millisecond })
	var ids []string
	for i := range 250 {
		ids = append(ids, fmt.Sprintf("job-%04d", i))
	}
	ids = append(ids, "job-0007") // a duplicate is asked once, answered twice
	sts, err := c.Status(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != len(ids) {
		t.Fatalf("%d statuses for %d ids", len(sts), len(ids))
	}
	for i, st := range sts {
		inFailed := i >= 100 && i < 200
		switch {
		case st.JobID != ids[i]:
			t.Fatalf("status %d is %s, want %s", i, st.JobID, ids[i])
		case inFailed && !errors.Is(st.Err, fts.ErrServer):
			t.Fatalf("job %s of the failing batch: Err = %v, want ErrServer", st.JobID, st.Err)
		case !inFailed && (st.Err != nil || st.State != "ACTIVE"):
			t.Fatalf("job %s: %+v", st.JobID, st)
		}
	}
	var sizes []int
	for _, r := range f.seenAll() {
		if strings.HasPrefix(r.Path, "/jobs/") {
			sizes = append(sizes, strings.Count(r.Path, ",")+1)
		}
	}
	if sizes[0] != 100 || sizes[len(sizes)-1] != 50 {
		t.Errorf("batch sizes %v: want 100 first and 50 last", sizes)
	}
	if len(sizes) < 4 {
		t.Errorf("batch sizes %v: want the 500 batch retried", sizes)
	}
}

func TestStatus_UnreadableBulkFallsBackPerJob(t *testing.T) {
	f := newFake(t)
	f.reply("GET /jobs/"+jobActive+","+jobOther, 200, []byte(`[{"job_id": "`+jobActive+`", "job_state": "ACTIVE", "files": [{"file_id": "x"}]}, `))
	f.reply("GET /jobs/"+jobActive, 200, []byte(`{"job_id": "`+jobActive+`", "job_state": "ACTIVE", "http_status": "200 Ok", "files": [{"file_id": {}}]}`))
	f.reply("GET /jobs/"+jobOther, 200, []byte(`{"job_id": "`+jobOther+`", "job_state": "FINISHED", "http_status": "200 Ok"}`))
	c := f.proxyClient(t, nil)
	sts, err := c.Status(context.Background(), []string{jobActive, jobOther})
	if err != nil {
		t.Fatal(err)
	}
	if sts[0].Err == nil || sts[0].Lost {
		t.Errorf("job with an unreadable entry: %+v, want Err", sts[0])
	}
	if sts[1].Err != nil || sts[1].State != "FINISHED" {
		t.Errorf("readable job after fallback: %+v", sts[1])
	}
}

func TestStatus_BadInputAndCancelledContext(t *testing.T) {
	f := newFake(t)
	c := f.proxyClient(t, nil)
	for _, ids := range [][]string{{""}, {"a,b"}, {"../whoami"}, {"a?x=1"}} {
		if _, err := c.Status(context.Background(), ids); err == nil {
			t.Errorf("Status(%q) accepted", ids)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Status(ctx, []string{jobActive}); !errors.Is(err, context.Canceled) {
		t.Errorf("Status with a cancelled context: %v", err)
	}
	if n := f.total(); n != 0 {
		t.Errorf("server saw %d requests", n)
	}
}
