package ftssim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
)

// FuzzSubmit posts arbitrary bodies: the simulator must answer every one
// with a JSON reply of a status FTS gives a submission, never panic.
func FuzzSubmit(f *testing.F) {
	for _, seed := range []string{
		`{"files":[{"sources":["gsiftp://a/f"],"destinations":["gsiftp://b/f"]}]}`,
		`{"files":[{"sources":["gsiftp://a/f","gsiftp://c/f"],"destinations":["gsiftp://b/f"],"filesize":"x","checksum":1}],"params":{"retry":"3","priority":null,"verify_checksum":"","max_time_in_queue":"é"}}`,
		`{"files":[{"sources":"gsiftp://a/f","destinations":[1]}],"params":[]}`,
		`{"files":{},"params":{"id_generator":"deterministic","sid":{"a":1},"job_metadata":[1]}}`,
		`{"delete":[]}`, `[]`, `null`, `{"files":[null]}`, `{"files":[{"sources":["::"],"destinations":["x://"]}]}`,
		`{"files":[{"sources":["gsiftp://a/f"],"destinations":["gsiftp://b/f"]}],"params":{"multihop":true,"reuse":"Y","overwrite_hop":1,"overwrite_when_only_on_disk":1}}`,
	} {
		f.Add(seed)
	}
	clk := newClock()
	sim := ftssim.New(ftssim.Options{Now: clk.Now, QueueDelay: time.Second, OAuth2: true})
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 405, 409:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("reply to %q is not JSON: %s", body, rec.Body)
		}
		if rec.Code == 200 {
			var r struct {
				JobID string `json:"job_id"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &r)
			st := httptest.NewRecorder()
			get := httptest.NewRequest(http.MethodGet, "/jobs/"+r.JobID+"?files=file_state", nil)
			get.Header.Set("Authorization", "Bearer t")
			clk.Advance(time.Second)
			sim.ServeHTTP(st, get)
			if st.Code != 200 || !json.Valid(st.Body.Bytes()) {
				t.Fatalf("status of %s after %q: %d %s", r.JobID, body, st.Code, st.Body)
			}
		}
	})
}
