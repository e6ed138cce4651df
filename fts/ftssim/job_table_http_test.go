package ftssim_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
)

func TestSubmit_InstantLife(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	id := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/f1", "davs://b.example.org:443/f1")))
	if !uuid1RE.MatchString(id) {
		t.Fatalf("job id %q is not a uuid1", id)
	}
	j := f.job(id)
	wantEq(t, "job_state", j["job_state"], "FINISHED")
	wantEq(t, "http_status", j["http_status"], "200 Ok")
	wantEq(t, "reason", j["reason"], "")
	wantEq(t, "source_se", j["source_se"], "gsiftp://a.example.org")
	wantEq(t, "dest_se", j["dest_se"], "davs://b.example.org")
	for _, k := range []string{"submit_time", "job_finished"} {
		if s, _ := j[k].(string); !ftsTimeRE.MatchString(s) {
			t.Errorf("%s = %v, want YYYY-MM-DDTHH:MM:SS", k, j[k])
		}
	}
	fl := files(t, j)
	wantEq(t, "files", len(fl), 1)
	wantEq(t, "file_state", fl[0]["file_state"], "FINISHED")
	if _, ok := fl[0]["file_id"].(float64); !ok {
		t.Errorf("file_id %v is not a number", fl[0]["file_id"])
	}
	if _, extra := fl[0]["activity"]; extra {
		t.Errorf("files= did not restrict the file fields: %v", fl[0])
	}
}

func TestStatus_Progression(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: 10 * time.Second, StartDelay: 5 * time.Second, TransferTime: 20 * time.Second})
	body := jobBody(nil, map[string]any{"sources": []string{"root://a.example.org//f"}, "destinations": []string{"root://b.example.org//f"}, "filesize": 20 << 20})
	id := f.submit(body)
	steps := []struct {
		after           time.Duration
		job, file       string
		started, ending bool
	}{
		{0, "SUBMITTED", "SUBMITTED", false, false},
		{9 * time.Second, "SUBMITTED", "SUBMITTED", false, false},
		{1 * time.Second, "ACTIVE", "READY", true, false},
		{5 * time.Second, "ACTIVE", "ACTIVE", true, false},
		{19 * time.Second, "ACTIVE", "ACTIVE", true, false},
		{1 * time.Second, "FINISHED", "FINISHED", true, true},
		{time.Hour, "FINISHED", "FINISHED", true, true},
	}
	for i, s := range steps {
		f.clk.Advance(s.after)
		j := f.job(id)
		fl := files(t, j)[0]
		if j["job_state"] != s.job || fl["file_state"] != s.file {
			t.Fatalf("step %d: job %v file %v, want %s %s", i, j["job_state"], fl["file_state"], s.job, s.file)
		}
		if got := fl["start_time"] != nil; got != s.started {
			t.Fatalf("step %d: start_time %v", i, fl["start_time"])
		}
		if got := fl["finish_time"] != nil; got != s.ending {
			t.Fatalf("step %d: finish_time %v", i, fl["finish_time"])
		}
		if s.started {
			wantEq(t, "reason once scheduled", fl["reason"], "")
		} else {
			wantEq(t, "reason before scheduling", fl["reason"], nil)
		}
	}
	fl := files(t, f.job(id))[0]
	wantEq(t, "start_time", fl["start_time"], "2026-03-04T10:00:10")
	wantEq(t, "finish_time", fl["finish_time"], "2026-03-04T10:00:35")
	wantEq(t, "tx_duration", fl["tx_duration"], 20)
	wantEq(t, "filesize", fl["filesize"], 20<<20)
	wantEq(t, "throughput", fl["throughput"], 1) // 20 MiB in 20 s
	if h, _ := fl["transfer_host"].(string); h == "" {
		t.Errorf("transfer_host = %v, want a host", fl["transfer_host"])
	}
}

func TestStatus_Bulk(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	a := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	b := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/2", "gsiftp://b.example.org/2")))
	const missing = "0b6cbf3e-0000-11ee-0000-000000000000"

	t.Run("all found", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+a+","+b, nil)
		wantEq(t, "code", r.code, 200)
		l := r.list(t)
		wantEq(t, "len", len(l), 2)
		wantEq(t, "first id", l[0].(map[string]any)["job_id"], a)
		wantEq(t, "second status", l[1].(map[string]any)["http_status"], "200 Ok")
	})
	t.Run("one missing is 207", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+a+","+missing+","+b+"?files=file_state", nil)
		wantEq(t, "code", r.code, 207)
		l := r.list(t)
		wantEq(t, "error entry", l[1], map[string]any{
			"job_id": missing, "http_status": "404 Not Found",
			"http_message": `No job with the id "` + missing + `" has been found`,
		})
		wantEq(t, "files", l[2].(map[string]any)["files"], []any{map[string]any{"file_state": "FINISHED"}})
	})
	t.Run("single missing is 404 dict", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+missing, nil)
		wantEq(t, "code", r.code, 404)
		wantEq(t, "body", r.obj(t), map[string]any{
			"job_id": missing, "http_status": "404 Not Found",
			"http_message": `No job with the id "` + missing + `" has been found`,
		})
	})
	t.Run("files of missing job", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+missing+"/files", nil)
		wantEq(t, "code", r.code, 404)
		wantEq(t, "status", r.obj(t)["status"], "404 Not Found")
	})
	t.Run("files list", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+a+"/files", nil)
		wantEq(t, "code", r.code, 200)
		fl := r.list(t)[0].(map[string]any)
		wantEq(t, "source_surl", fl["source_surl"], "gsiftp://a.example.org/1")
		wantEq(t, "job_id", fl["job_id"], a)
	})
	t.Run("field", func(t *testing.T) {
		r := f.do(http.MethodGet, "/jobs/"+a+"/job_state", nil)
		wantEq(t, "field", r.json(t), "FINISHED")
	})
}

func TestSubmit_DeterministicID(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	body := jobBody(map[string]any{"id_generator": "deterministic", "sid": "sid-1"}, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1"))
	// Python: uuid.uuid5(uuid.uuid5(BASE_ID, "cms"), "sid-1").
	const want = "fb127a67-a1c2-52af-aebe-7b0665810483"
	wantEq(t, "job id", f.submit(body), want)
	wantEq(t, "DeterministicJobID", ftssim.DeterministicJobID("cms", "sid-1"), want)
	wantEq(t, "dteam id", ftssim.DeterministicJobID("dteam", "12345"), "50659f89-a38d-5815-9fbd-565b79a7e354")

	r := f.do(http.MethodPost, "/jobs", body)
	wantEq(t, "code", r.code, 409)
	wantEq(t, "body", r.obj(t), map[string]any{"status": "409 Conflict", "message": "The sid provided by the user is duplicated"})
	wantEq(t, "files received", len(f.srv.Files()), 1)

	f.srv.LoseJob(want)
	wantEq(t, "lost job", f.do(http.MethodGet, "/jobs/"+want, nil).code, 404)
	wantEq(t, "resubmit after loss", f.submit(body), want)
	wantEq(t, "files received", len(f.srv.Files()), 2)
}

func TestCancel(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Minute, TransferTime: time.Minute})
	running := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1"), transfer("gsiftp://a.example.org/2", "gsiftp://b.example.org/2")))
	f.clk.Advance(time.Minute) // both files READY

	r := f.do(http.MethodDelete, "/jobs/"+running, nil)
	wantEq(t, "code", r.code, 200)
	j := r.obj(t)
	wantEq(t, "job_state", j["job_state"], "CANCELED")
	wantEq(t, "reason", j["reason"], "Job canceled by the user")
	wantEq(t, "http_status", j["http_status"], "200 Ok")
	wantEq(t, "cancel_job", j["cancel_job"], true)
	for _, fl := range files(t, f.job(running)) {
		wantEq(t, "file_state", fl["file_state"], "CANCELED")
		wantEq(t, "file reason", fl["reason"], "Job canceled by the user")
		wantEq(t, "finish_time of a running file", fl["finish_time"], nil)
	}
	f.clk.Advance(2 * time.Minute)
	for _, fl := range files(t, f.job(running)) {
		wantEq(t, "file_state later", fl["file_state"], "CANCELED")
		if fl["finish_time"] == nil {
			t.Errorf("finish_time still null after the url-copy died")
		}
	}

	r = f.do(http.MethodDelete, "/jobs/"+running, nil)
	wantEq(t, "terminal code", r.code, 200)
	wantEq(t, "terminal http_status", r.obj(t)["http_status"], "304 Not Modified")
	wantEq(t, "terminal http_message", r.obj(t)["http_message"], "The job is in a terminal state")

	r = f.do(http.MethodDelete, "/jobs/nope", nil)
	wantEq(t, "unknown code", r.code, 404)
	wantEq(t, "unknown body", r.obj(t)["http_message"], `No job with the id "nope" has been found`)

	queued := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/3", "gsiftp://b.example.org/3")))
	r = f.do(http.MethodDelete, "/jobs/"+queued+",nope", nil)
	wantEq(t, "several code", r.code, 207)
	l := r.list(t)
	wantEq(t, "queued canceled", l[0].(map[string]any)["job_state"], "CANCELED")
	wantEq(t, "unknown entry", l[1].(map[string]any)["http_status"], "404 Not Found")
	fl := files(t, f.job(queued))[0]
	if fl["finish_time"] == nil {
		t.Errorf("a queued file canceled has finish_time null")
	}
	if !strings.Contains(string(f.do(http.MethodGet, "/jobs/"+queued, nil).body), `"job_finished":"2026-`) {
		t.Errorf("canceled job has no job_finished")
	}
}

func TestModify_Priority(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Hour})
	id := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	r := f.do(http.MethodPost, "/jobs/"+id, map[string]any{"params": map[string]any{"priority": 5}})
	wantEq(t, "code", r.code, 200)
	wantEq(t, "reply priority", r.obj(t)["priority"], 5)
	wantEq(t, "job priority", f.job(id)["priority"], 5)
	r = f.do(http.MethodPost, "/jobs/"+id, map[string]any{"params": map[string]any{"priority": "high"}})
	wantEq(t, "bad priority", r.obj(t), map[string]any{"status": "400 Bad Request", "message": "Invalid priority value"})
}

// TestSubmit_DuplicatedDestination: with CheckDuplicates, a job with a
// file whose destination an active file already writes is refused whole
// with FTS's second 409, and nothing of it is stored; once that file has
// ended the destination is free again. A job whose own two files write one
// destination is refused too. Without the option nothing is checked.
func TestSubmit_DuplicatedDestination(t *testing.T) {
	f := newFixture(t, ftssim.Options{CheckDuplicates: true, QueueDelay: time.Minute})
	first := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	both := jobBody(nil, transfer("gsiftp://a.example.org/2", "gsiftp://b.example.org/2"),
		transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1"))
	r := f.do(http.MethodPost, "/jobs", both)
	wantEq(t, "code", r.code, 409)
	// Python: uuid.uuid5(BASE_ID, "gsiftp://b.example.org/1")
	wantEq(t, "dest_surl_uuid", ftssim.DestinationUUID("gsiftp://b.example.org/1"), "e7c3587c-0dbc-5176-82f0-467bcc256392")
	key := "'e7c3587c-0dbc-5176-82f0-467bcc256392'"
	msg, _ := r.obj(t)["message"].(string)
	if !strings.HasPrefix(msg, "The submission is duplicated (") || !strings.Contains(msg, "Duplicate entry "+key+" for key 'dest_surl_uuid'") {
		t.Errorf("message %q", msg)
	}
	wantEq(t, "files received", len(f.srv.Files()), 1)

	self := jobBody(nil, transfer("gsiftp://a.example.org/3", "gsiftp://b.example.org/3"),
		transfer("gsiftp://a.example.org/4", "gsiftp://b.example.org/3"))
	wantEq(t, "two files of one job to one destination", f.do(http.MethodPost, "/jobs", self).code, 409)

	f.clk.Advance(time.Hour)
	wantEq(t, "first job", f.job(first)["job_state"], "FINISHED")
	f.submit(both)
	wantEq(t, "files received", len(f.srv.Files()), 3)

	// an archived (lost) job holds its destination no more
	lost := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/5", "gsiftp://b.example.org/5")))
	f.srv.LoseJob(lost)
	f.submit(jobBody(nil, transfer("gsiftp://a.example.org/5", "gsiftp://b.example.org/5")))

	g := newFixture(t, ftssim.Options{QueueDelay: time.Minute})
	g.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	g.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
}
