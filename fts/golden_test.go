package fts_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/asyncstageout/aso/fts"
)

// The golden FTS3 replies shared with the simulator (testdata/fts), read
// by the client as a server would send them.

const sharedLost = "00000000-0000-0000-0000-000000000000"

func TestGolden_Status(t *testing.T) {
	f := newFake(t)
	f.reply("GET /jobs/"+jobShared, 200, shared(t, "job.json"))
	f.reply("GET /jobs/"+sharedLost+","+jobShared, http.StatusMultiStatus, shared(t, "bulk_207.json"))
	f.reply("GET /jobs/"+sharedLost, http.StatusNotFound, shared(t, "not_found.json"))
	c := f.proxyClient(t, nil)
	ctx := context.Background()

	sts, err := c.Status(ctx, []string{jobShared})
	if err != nil || sts[0].Err != nil || sts[0].State != "FINISHED" || len(sts[0].Files) != 0 {
		t.Errorf("job.json: %v %+v", err, sts)
	}
	sts, err = c.Status(ctx, []string{sharedLost, jobShared})
	if err != nil {
		t.Fatal(err)
	}
	if !sts[0].Lost || sts[0].Err != nil {
		t.Errorf("bulk_207.json missing job: %+v, want Lost", sts[0])
	}
	st := sts[1]
	if st.Err != nil || st.State != "FINISHED" || len(st.Files) != 1 {
		t.Fatalf("bulk_207.json job: %+v", st)
	}
	if file := st.Files[0]; file.TransferID() != "t-1" || file.State != "FINISHED" ||
		file.FinishTime.Sub(file.StartTime) != 12*time.Second {
		t.Errorf("bulk_207.json file: %+v", file)
	}
	sts, err = c.Status(ctx, []string{sharedLost})
	if err != nil || !sts[0].Lost {
		t.Errorf("not_found.json: %v %+v, want Lost", err, sts)
	}
}

func TestGolden_FileAttributes(t *testing.T) {
	// files.json holds every attribute of a file row; the status of a job
	// carries the same objects.
	var files []json.RawMessage
	if err := json.Unmarshal(shared(t, "files.json"), &files); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"job_id": jobShared, "job_state": "FINISHED", "http_status": "200 Ok", "files": files})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := fts.ParseStatusReply(body, []string{jobShared})
	if err != nil || len(sts[0].Files) != 1 {
		t.Fatalf("files.json: %v %+v", err, sts)
	}
	file := sts[0].Files[0]
	if file.FileID != 4084627251 || file.State != "FINISHED" || file.Filesize != 1048576 || file.Throughput != 0.0833 ||
		file.SourceSURL != "gsiftp://eoscmsftp.cern.ch//eos/cms/store/temp/user/u/f.root" ||
		file.DestSURL != "davs://cmsdcadisk.fnal.gov:2880/dcache/uscmsdisk/store/user/u/f.root" {
		t.Errorf("file = %+v", file)
	}
	if start := time.Date(2024, 9, 5, 10, 14, 50, 0, time.UTC); !file.StartTime.Equal(start) || file.FinishTime.Sub(start) != 12*time.Second {
		t.Errorf("times %v, %v", file.StartTime, file.FinishTime)
	}
	if got := sts[0].Files[0].TransferID(); got != "t-1" {
		t.Errorf("TransferID = %q", got)
	}
}

func TestGolden_WhoAmIAndJobIDs(t *testing.T) {
	f := newFake(t)
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	c := f.proxyClient(t, nil)
	w, err := c.WhoAmI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.DelegationID != "9e7a1c0d2b3f4a5e" || w.Method != "certificate" || w.BaseID != fts.BaseID ||
		!strings.HasSuffix(w.UserDN, "CN=CMS User") || len(w.VOs) != 1 {
		t.Errorf("whoami = %+v", w)
	}
	// The server's vos_id is the namespace of the VO's deterministic ids.
	var raw struct {
		VOsID []string `json:"vos_id"`
	}
	if err := json.Unmarshal(shared(t, "whoami.json"), &raw); err != nil {
		t.Fatal(err)
	}
	ns := uuid.MustParse(raw.VOsID[0])
	if got, want := fts.JobIDFromSID(w.VOs[0], "sid-9"), uuid.NewSHA1(ns, []byte("sid-9")).String(); got != want {
		t.Errorf("JobIDFromSID = %s, want %s from the server's vos_id", got, want)
	}
}

func TestGolden_Errors(t *testing.T) {
	f := newFake(t)
	f.reply("GET /whoami", http.StatusForbidden, shared(t, "forbidden_403.html"))
	f.reply("POST /jobs", http.StatusServiceUnavailable, shared(t, "unavailable_503.html"))
	c := f.proxyClient(t, func(cfg *fts.Config) { cfg.MaxElapsed = 50 * time.Millisecond })
	ctx := context.Background()
	_, err := c.WhoAmI(ctx)
	if !errors.Is(err, fts.ErrForbidden) || !strings.HasSuffix(err.Error(), "HTTP 403 Forbidden: The user does not belong to any authorized vo") {
		t.Errorf("forbidden_403.html: %v", err)
	}
	_, err = c.Submit(ctx, testSubmission("sid-8"))
	if !errors.Is(err, fts.ErrServer) || !fts.IsTransient(err) || !strings.Contains(err.Error(), "temporarily unable") {
		t.Errorf("unavailable_503.html: %v", err)
	}
	if n := len(f.requests("POST /jobs")); n < 2 {
		t.Errorf("a 503 submission was tried %d times, want it retried (the server did not act)", n)
	}
}
