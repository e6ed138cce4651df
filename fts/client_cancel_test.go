package fts_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/asyncstageout/aso/fts"
)

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
