package fts_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/asyncstageout/aso/fts"
)

func TestCancel_Bulk(t *testing.T) {
	f := newFake(t)
	f.reply("DELETE /jobs/"+jobActive+","+jobLost+","+jobOther, http.StatusMultiStatus, golden(t, "cancel_207.json"))
	c := f.proxyClient(t, nil)
	res, err := c.Cancel(context.Background(), []string{jobActive, jobLost, jobOther})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.JobID != jobActive || r.State != "CANCELED" || r.Err != nil {
		t.Errorf("active job: %+v, want CANCELED", r)
	}
	if r := res[1]; r.JobID != jobLost || !errors.Is(r.Err, fts.ErrNotFound) {
		t.Errorf("unknown job: %+v, want ErrNotFound", r)
	}
	if r := res[2]; r.JobID != jobOther || r.State != "FINISHED" || r.Err != nil || r.Message != "The job is in a terminal state" {
		t.Errorf("finished job: %+v, want success with its terminal state", r)
	}
}

func TestCancel_SingleAlreadyTerminalOrUnknown(t *testing.T) {
	f := newFake(t)
	f.reply("DELETE /jobs/"+jobShared, 200, shared(t, "cancel_304.json"))
	f.reply("DELETE /jobs/"+jobLost, 404, shared(t, "not_found.json"))
	c := f.proxyClient(t, nil)
	res, err := c.Cancel(context.Background(), []string{jobShared})
	if err != nil || res[0].Err != nil || res[0].State != "FINISHED" || res[0].Message != "The job is in a terminal state" {
		t.Errorf("Cancel of a finished job: %v %+v, want success with state FINISHED", err, res)
	}
	res, err = c.Cancel(context.Background(), []string{jobLost})
	if err != nil || !errors.Is(res[0].Err, fts.ErrNotFound) {
		t.Errorf("Cancel of an unknown job: %v %+v, want ErrNotFound", err, res)
	}
}

func TestCancelFiles(t *testing.T) {
	f := newFake(t)
	f.reply("DELETE /jobs/"+jobActive+"/files/1001,1002,1003", 200, []byte(`["CANCELED", "FINISHED", "File does not belong to the job"]`))
	f.reply("DELETE /jobs/"+jobActive+"/files/1001", 200, []byte(`"CANCELED"`))
	f.reply("DELETE /jobs/"+jobOther+"/files/7", 400,
		[]byte(`{"status": "400 Bad Request", "message": "Multihop or reuse jobs must be cancelled at once (H)"}`))
	c := f.proxyClient(t, nil)
	got, err := c.CancelFiles(context.Background(), jobActive, []int64{1001, 1002, 1003})
	if want := []string{"CANCELED", "FINISHED", "File does not belong to the job"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("CancelFiles = %q, %v; want %q", got, err, want)
	}
	got, err = c.CancelFiles(context.Background(), jobActive, []int64{1001})
	if want := []string{"CANCELED"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("CancelFiles of one file = %q, %v; want %q", got, err, want)
	}
	if _, err := c.CancelFiles(context.Background(), jobOther, []int64{7}); !errors.Is(err, fts.ErrBadRequest) {
		t.Errorf("CancelFiles of a multihop job: %v, want ErrBadRequest", err)
	}
	if _, err := c.CancelFiles(context.Background(), jobActive, nil); err == nil {
		t.Error("CancelFiles without files accepted")
	}
}

func TestCancel_RequestRefused(t *testing.T) {
	f := newFake(t)
	f.reply("DELETE /jobs/"+jobActive+","+jobOther, http.StatusUnauthorized,
		[]byte("<!doctype html>\n<title>401 Unauthorized</title>\n<h1>Unauthorized</h1>\n<p>A valid X509 certificate or proxy is needed</p>\n"))
	c := f.proxyClient(t, nil)
	res, err := c.Cancel(context.Background(), []string{jobActive, jobOther})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, fts.ErrUnauthorized) || r.State != "" {
			t.Errorf("%s: %+v, want ErrUnauthorized", r.JobID, r)
		}
	}
}
