package fts_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// TestSubmit_ParamsAsTheServerStoresThem submits to the simulator, which
// reads the parameters as FTS3 does, and reads back what it stored: a bare
// number of hours in queue is a limit (a string without a unit is none to
// FTS), and VerifyNone turns verification off although every file carries
// a checksum (false would still compare the destination with it).
func TestSubmit_ParamsAsTheServerStoresThem(t *testing.T) {
	srv := ftstest.NewServer(t, ftstest.Options{Tokens: []string{"local-token"}})
	c := newClient(t, fts.Config{Endpoint: srv.URL, TokenFile: writeToken(t, "local-token", 0o600)}, nil)
	for _, tc := range []struct {
		name   string
		params fts.SubmitParams
		verify string
		limit  bool
	}{
		{"hours as a bare number", fts.SubmitParams{VerifyChecksum: fts.VerifyBoth, MaxTimeInQueue: "12"}, "b", true},
		{"a unit", fts.SubmitParams{VerifyChecksum: fts.VerifyNone, MaxTimeInQueue: "90m"}, "n", true},
		{"the server's defaults", fts.SubmitParams{}, "t", false},
	} {
		s := simSubmission("", 1)
		s.Params = tc.params
		id, err := c.Submit(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/jobs/"+id, nil)
		req.Header.Set("Authorization", "Bearer local-token")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var job struct {
			Verify string `json:"verify_checksum"`
			Limit  any    `json:"max_time_in_queue"`
		}
		err = json.NewDecoder(resp.Body).Decode(&job)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if job.Verify != tc.verify || (job.Limit != nil) != tc.limit {
			t.Errorf("%s: stored verify_checksum %q, max_time_in_queue %v; want %q and a limit: %v", tc.name, job.Verify, job.Limit, tc.verify, tc.limit)
		}
	}
}
