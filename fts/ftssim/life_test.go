package ftssim_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

func TestLife_RecoverableFailureIsRetried(t *testing.T) {
	f := newFixture(t, ftssim.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	id := f.submit(jobBody(map[string]any{"retry": 2, "retry_delay": 60}, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")))

	fl := files(t, f.job(id))[0]
	wantEq(t, "after attempt 1", fl["file_state"], "SUBMITTED")
	wantEq(t, "retry", fl["retry"], 1)
	wantEq(t, "start_time reset", fl["start_time"], nil)
	wantEq(t, "job state", f.job(id)["job_state"], "ACTIVE")

	f.clk.Advance(59 * time.Second)
	wantEq(t, "before retry_delay", files(t, f.job(id))[0]["retry"], 1)
	f.clk.Advance(time.Second)
	wantEq(t, "after attempt 2", files(t, f.job(id))[0]["retry"], 2)
	f.clk.Advance(time.Minute)
	j := f.job(id)
	fl = files(t, j)[0]
	wantEq(t, "after attempt 3", fl["file_state"], "FAILED")
	wantEq(t, "retries done", fl["retry"], 2)
	wantEq(t, "reason", fl["reason"], "TRANSFER [110] Connection timed out")
	wantEq(t, "job", j["job_state"], "FAILED")
	wantEq(t, "job reason", j["reason"], "One or more files failed. Please have a look at the details for more information")

	r := f.do(http.MethodGet, fmt.Sprintf("/jobs/%s/files/%.0f/retries", id, fl["file_id"]), nil)
	rows := r.list(t)
	wantEq(t, "retry rows", len(rows), 2)
	row := rows[1].(map[string]any)
	wantEq(t, "attempt", row["attempt"], 2)
	wantEq(t, "datetime", row["datetime"], "2026-03-04T10:01:00")
	wantEq(t, "row reason", row["reason"], "TRANSFER [110] Connection timed out")
}

func TestLife_Recoverability(t *testing.T) {
	cases := []struct {
		reason string
		retry  int
		state  string
	}{
		{"SOURCE [2] No such file or directory", 0, "FAILED"},
		{"DESTINATION [17] Destination file exists and overwrite is not enabled", 0, "FAILED"},
		{"SOURCE [5] Source and user-defined ADLER32 checksum do not match (1 != 2)", 0, "FAILED"},
		{"DESTINATION [13] Permission denied", 0, "FAILED"},
		{"TRANSFER [28] No space left on device", 0, "FAILED"},
		{"TRANSFER [125] Transfer canceled", 0, "CANCELED"},
		{"TRANSFER [70] Communication error on send", 1, "FAILED"},
		{"SOURCE [110] Connection timed out", 1, "FAILED"},
		{"DESTINATION [28] No space left on device", 1, "FAILED"},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			f := newFixture(t, ftssim.Options{FailureRate: 1, FailureReasons: []string{c.reason}})
			id := f.submit(jobBody(map[string]any{"retry": 1, "retry_delay": 1}, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")))
			f.job(id)
			f.clk.Advance(time.Second)
			fl := files(t, f.job(id))[0]
			wantEq(t, "state", fl["file_state"], c.state)
			wantEq(t, "retries", fl["retry"], c.retry)
			wantEq(t, "reason", fl["reason"], c.reason)
		})
	}
}

func TestLife_RetryDefaults(t *testing.T) {
	f := newFixture(t, ftssim.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}, DefaultRetry: 1})
	src, dst := "gsiftp://a.example.org/f", "gsiftp://b.example.org/f"
	def := f.submit(jobBody(nil, transfer(src, dst)))
	none := f.submit(jobBody(map[string]any{"retry": -1}, transfer(src, dst)))
	wantEq(t, "retry -1 fails at once", files(t, f.job(none))[0]["file_state"], "FAILED")
	wantEq(t, "retry 0 uses the server default", files(t, f.job(def))[0]["file_state"], "SUBMITTED")
	f.clk.Advance(119 * time.Second)
	wantEq(t, "default retry_delay is 120 s", files(t, f.job(def))[0]["file_state"], "SUBMITTED")
	f.clk.Advance(time.Second)
	wantEq(t, "after the default retry", files(t, f.job(def))[0]["file_state"], "FAILED")
}

func TestLife_QueueExpiry(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: 2 * time.Hour})
	id := f.submit(jobBody(map[string]any{"max_time_in_queue": 1}, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")))
	f.clk.Advance(59 * time.Minute)
	wantEq(t, "before expiry", f.job(id)["job_state"], "SUBMITTED")
	f.clk.Advance(2 * time.Hour)
	j := f.job(id)
	fl := files(t, j)[0]
	const reason = "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"
	wantEq(t, "file", fl["file_state"], "CANCELED")
	wantEq(t, "file reason", fl["reason"], reason)
	wantEq(t, "finish_time is the expiry", fl["finish_time"], "2026-03-04T11:00:00")
	wantEq(t, "job", j["job_state"], "CANCELED")
	wantEq(t, "job_finished", j["job_finished"], "2026-03-04T11:00:00")
}

func TestLife_ExpiryLeavesRunningFiles(t *testing.T) {
	f := newFixture(t, ftssim.Options{TransferTime: 2 * time.Hour})
	id := f.submit(jobBody(map[string]any{"max_time_in_queue": "1h"}, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")))
	f.clk.Advance(3 * time.Hour)
	wantEq(t, "active at expiry, finished later", f.job(id)["job_state"], "FINISHED")
}

func TestLife_ExpiryCancelsUnusedHops(t *testing.T) {
	f := newFixture(t, ftssim.Options{TransferTime: 2 * time.Hour})
	id := f.submit(jobBody(map[string]any{"multihop": true, "max_time_in_queue": "1h"},
		transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f"), transfer("gsiftp://b.example.org/f", "gsiftp://c.example.org/f")))
	f.clk.Advance(3 * time.Hour)
	j := f.job(id)
	fl := files(t, j)
	wantEq(t, "hops", []any{fl[0]["file_state"], fl[1]["file_state"]}, []any{"FINISHED", "CANCELED"})
	wantEq(t, "unused hop reason", fl[1]["reason"], "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)")
	wantEq(t, "job", j["job_state"], "CANCELED")
	wantEq(t, "job_finished", j["job_finished"], "2026-03-04T12:00:00")
}

func TestLife_CancelFiles(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Minute})
	id := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1"), transfer("gsiftp://a.example.org/2", "gsiftp://b.example.org/2")))
	fl := f.do(http.MethodGet, "/jobs/"+id+"/files", nil).list(t)
	first := fmt.Sprintf("%.0f", fl[0].(map[string]any)["file_id"])
	second := fmt.Sprintf("%.0f", fl[1].(map[string]any)["file_id"])

	r := f.do(http.MethodDelete, "/jobs/"+id+"/files/"+first, nil)
	wantEq(t, "one file", r.json(t), "CANCELED")
	wantEq(t, "job still active", f.job(id)["job_state"], "SUBMITTED")
	r = f.do(http.MethodDelete, "/jobs/"+id+"/files/"+first+","+second+",999999", nil)
	wantEq(t, "several", r.json(t), []any{"CANCELED", "CANCELED", "File does not belong to the job"})
	wantEq(t, "job", f.job(id)["job_state"], "CANCELED")
}

func TestLife_Multihop(t *testing.T) {
	f := newFixture(t, ftssim.Options{TransferTime: time.Minute})
	id := f.submit(jobBody(map[string]any{"multihop": true},
		transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f"), transfer("gsiftp://b.example.org/f", "gsiftp://c.example.org/f")))
	j := f.job(id)
	wantEq(t, "job_type", j["job_type"], "H")
	wantEq(t, "dest_se", j["dest_se"], "gsiftp://c.example.org")
	fl := files(t, j)
	wantEq(t, "initial", []any{fl[0]["file_state"], fl[1]["file_state"]}, []any{"ACTIVE", "NOT_USED"})
	f.clk.Advance(time.Minute)
	fl = files(t, f.job(id))
	wantEq(t, "second hop", []any{fl[0]["file_state"], fl[1]["file_state"]}, []any{"FINISHED", "ACTIVE"})
	f.clk.Advance(time.Minute)
	wantEq(t, "done", f.job(id)["job_state"], "FINISHED")
}

func TestLife_Replicas(t *testing.T) {
	f := newFixture(t, ftssim.Options{FailureRate: 1, FailureReasons: []string{"SOURCE [2] No such file or directory"}})
	id := f.submit(map[string]any{"files": []any{map[string]any{
		"sources": []string{"gsiftp://a.example.org/f", "gsiftp://c.example.org/f"}, "destinations": []string{"gsiftp://b.example.org/f"},
	}}})
	j := f.job(id)
	wantEq(t, "job_type", j["job_type"], "R")
	fl := files(t, j)
	wantEq(t, "both replicas tried", []any{fl[0]["file_state"], fl[1]["file_state"]}, []any{"FAILED", "FAILED"})
	wantEq(t, "job", j["job_state"], "FAILED")
}

// TestLife_DeterministicUnderSeed: the seed decides every outcome; job ids
// are version 1 UUIDs of the real clock, as FTS's, and not the seed's.
func TestLife_DeterministicUnderSeed(t *testing.T) {
	run := func(seed int64) string {
		f := newFixture(t, ftssim.Options{Seed: seed, FailureRate: 0.5})
		var out string
		for i := 0; i < 20; i++ {
			id := f.submit(jobBody(nil, transfer(fmt.Sprintf("gsiftp://a.example.org/%d", i), "gsiftp://b.example.org/f")))
			fl := files(t, f.job(id))[0]
			out += fmt.Sprintf("%v %v %v|", fl["file_state"], fl["reason"], fl["transfer_host"])
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if a != b {
		t.Fatalf("two runs with seed 42 differ:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("seeds 42 and 43 gave the same run: %s", a)
	}
}

// TestLife_Speed: at speed 3600 the simulator's clock runs a simulated
// hour in each real second. It runs in a synctest bubble, whose clock the
// simulator reads as real time: the test moves it by sleeping.
func TestLife_Speed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := ftssim.New(ftssim.Options{Speed: 3600, TransferTime: time.Hour, OAuth2: true})
		c := &http.Client{Transport: handlerTransport{sim}}
		const base = "http://fts.example.org"
		r := call(t, c, http.MethodPost, base+"/jobs", testToken, jobBody(nil, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")))
		id := r.obj(t)["job_id"].(string)
		state := func() any { return call(t, c, http.MethodGet, base+"/jobs/"+id, testToken, nil).obj(t)["job_state"] }
		time.Sleep(time.Second - time.Millisecond) // the bubble's clock: no real time passes
		if st := state(); st == "FINISHED" {
			t.Fatalf("a transfer of a simulated hour finished after %s at speed 3600", time.Second-time.Millisecond)
		}
		time.Sleep(time.Millisecond)
		if st := state(); st != "FINISHED" {
			t.Fatalf("a transfer of a simulated hour is %v after a second at speed 3600, want FINISHED", st)
		}
	})
}

// handlerTransport serves a client's requests with a handler in the same
// goroutine, without a network: for tests in a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func TestLife_TerminalStatesNeverChange(t *testing.T) {
	f := newFixture(t, ftssim.Options{TransferTime: time.Minute})
	done := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	f.clk.Advance(time.Minute)
	before := f.job(done)
	f.srv.SetFailureRate(1)
	f.clk.Advance(24 * time.Hour)
	wantEq(t, "finished job later", f.job(done), before)
	wantEq(t, "cancel of a finished job", f.do(http.MethodDelete, "/jobs/"+done, nil).obj(t)["http_status"], "304 Not Modified")
	wantEq(t, "after cancel", f.job(done), before)
}

func TestLife_Staging(t *testing.T) {
	p := ftstest.NewPKI(t)
	clk := newClock()
	srv := tlsServer(t, p, ftssim.Options{Now: clk.Now, QueueDelay: time.Minute, TransferTime: time.Minute, OAuth2: true})
	cert := certClient(t, p, p.ProxyPEM)
	body := jobBody(map[string]any{"bring_online": 3600}, transfer("root://tape.example.org//f", "root://disk.example.org//f"))

	r := call(t, srv.Client(), http.MethodPost, srv.URL+"/jobs", testToken, body)
	wantEq(t, "token staging", r.obj(t), map[string]any{"status": "400 Bad Request", "message": "Requests to retrieve from tape using token authentication are not supported"})

	r = call(t, cert, http.MethodPost, srv.URL+"/jobs", "", body)
	wantEq(t, "submit", r.code, 200)
	path := srv.URL + "/jobs/" + r.obj(t)["job_id"].(string) + "?files=file_state,staging_start,staging_finished"
	state := func() (string, map[string]any) {
		j := call(t, cert, http.MethodGet, path, "", nil).obj(t)
		return j["job_state"].(string), files(t, j)[0]
	}
	js, fl := state()
	wantEq(t, "initial", []any{js, fl["file_state"], fl["staging_finished"]}, []any{"STAGING", "STAGING", nil})
	clk.Advance(time.Minute)
	js, fl = state()
	wantEq(t, "staged", []any{js, fl["file_state"], fl["staging_start"], fl["staging_finished"]},
		[]any{"STAGING", "SUBMITTED", "2026-03-04T10:00:00", "2026-03-04T10:01:00"})
	clk.Advance(time.Minute)
	js, fl = state()
	wantEq(t, "transferring", []any{js, fl["file_state"]}, []any{"ACTIVE", "ACTIVE"})
	clk.Advance(time.Minute)
	js, _ = state()
	wantEq(t, "done", js, "FINISHED")
}
