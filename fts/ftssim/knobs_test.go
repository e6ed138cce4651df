package ftssim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

func TestKnobs_Fail503(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	f.srv.Fail503(2)
	for i := 0; i < 2; i++ {
		r := f.do(http.MethodGet, "/whoami", nil)
		wantEq(t, "code", r.code, 503)
		if !strings.Contains(string(r.body), "<title>503 Service Unavailable</title>") {
			t.Fatalf("503 body is not werkzeug's HTML: %s", r.body)
		}
	}
	wantEq(t, "third request", f.do(http.MethodGet, "/whoami", nil).code, 200)
	wantEq(t, "whoami count", f.srv.Requests()["whoami"], 3)
}

func TestKnobs_Hang(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	f.srv.SetHang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/whoami", nil)
	req.Header.Set("Authorization", "Bearer x")
	start := time.Now()
	_, err := f.srv.Client().Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung request: err %v, want the client's deadline", err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Fatalf("the request returned before the deadline")
	}

	done := make(chan int, 1)
	arrived := f.srv.Arrival("whoami")
	go func() {
		done <- call(t, f.srv.Client(), http.MethodGet, f.srv.URL+"/whoami", testToken, nil).code
	}()
	select {
	case <-arrived:
	case code := <-done:
		t.Fatalf("answered %d, uncounted, while hanging", code)
	}
	select {
	case code := <-done:
		t.Fatalf("answered %d while hanging", code)
	case <-time.After(50 * time.Millisecond): // let it wait: no answer may come while hanging
	}
	f.srv.SetHang(false)
	select {
	case code := <-done:
		wantEq(t, "after SetHang(false)", code, 200)
	case <-time.After(5 * time.Second):
		t.Fatal("a held request was not released by SetHang(false)")
	}
}

func TestKnobs_Latency(t *testing.T) {
	srv := ftstest.NewServer(t, ftssim.Options{Latency: 80 * time.Millisecond, OAuth2: true})
	start := time.Now()
	call(t, srv.Client(), http.MethodGet, srv.URL+"/whoami", testToken, nil)
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("reply after %v, want at least the 80ms latency", d)
	}
}

func TestKnobs_SimFilesAndCounters(t *testing.T) {
	f := newFixture(t, ftssim.Options{})
	tr := transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f")
	tr["metadata"] = map[string]any{"transfer_id": "t-1"}
	body := jobBody(map[string]any{"id_generator": "deterministic", "sid": "s1"}, tr)
	id := f.submit(body)
	f.do(http.MethodPost, "/jobs", body) // 409, not received twice
	f.srv.LoseJob(id)
	f.do(http.MethodGet, "/jobs/"+id, nil)

	r := call(t, f.srv.Client(), http.MethodGet, f.srv.URL+"/sim/files", "", nil)
	wantEq(t, "code", r.code, 200)
	var got []ftssim.SimFile
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "same as Files()", got, f.srv.Files())
	wantEq(t, "files", len(got), 1)
	g := got[0]
	wantEq(t, "job", g.JobID, id)
	wantEq(t, "sid", g.SID, "s1")
	wantEq(t, "source", g.Source, "gsiftp://a.example.org/f")
	wantEq(t, "destination", g.Destination, "gsiftp://b.example.org/f")
	wantEq(t, "metadata", g.Metadata, json.RawMessage(`{"transfer_id":"t-1"}`))
	wantEq(t, "submitted", g.Submitted, f.clk.Now())
	wantEq(t, "counters", f.srv.Requests(), map[string]int{"submit": 2, "status": 1})
}

func TestKnobs_ListJobs(t *testing.T) {
	f := newFixture(t, ftssim.Options{QueueDelay: time.Minute})
	a := f.submit(jobBody(nil, transfer("gsiftp://a.example.org/1", "gsiftp://b.example.org/1")))
	wantEq(t, "unfinished", len(f.do(http.MethodGet, "/jobs", nil).list(t)), 1)
	f.clk.Advance(time.Minute)
	wantEq(t, "finished jobs are not listed", len(f.do(http.MethodGet, "/jobs", nil).list(t)), 0)
	l := f.do(http.MethodGet, "/jobs?state_in=FINISHED", nil).list(t)
	wantEq(t, "state_in", l[0].(map[string]any)["job_id"], a)
}

func TestKnobs_CloseReleasesHungRequests(t *testing.T) {
	srv, err := ftssim.Start("127.0.0.1:0", ftssim.Options{OAuth2: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetHang(true)
	errc := make(chan error, 1)
	arrived := srv.Arrival("whoami")
	go func() {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/whoami", nil)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := (&http.Client{}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-arrived: // the request hangs
	case err := <-errc:
		t.Fatalf("the request ended before it hung: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a hung request")
	}
	if err := <-errc; err == nil {
		t.Fatal("the hung request got a reply")
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestKnobs_Concurrent(t *testing.T) {
	f := newFixture(t, ftssim.Options{FailureRate: 0.3, QueueDelay: time.Second})
	const workers, jobs = 8, 15
	errs := make(chan string, workers*jobs)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				body := jobBody(nil, transfer(fmt.Sprintf("gsiftp://a.example.org/%d/%d", w, i), "gsiftp://b.example.org/f"))
				r := call(t, f.srv.Client(), http.MethodPost, f.srv.URL+"/jobs", testToken, body)
				if r.code != 200 {
					errs <- fmt.Sprintf("submit: %d %s", r.code, r.body)
					continue
				}
				f.clk.Advance(100 * time.Millisecond)
				id := r.obj(t)["job_id"].(string)
				if r := call(t, f.srv.Client(), http.MethodGet, f.srv.URL+"/jobs/"+id, testToken, nil); r.code != 200 {
					errs <- fmt.Sprintf("status: %d %s", r.code, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	seen := map[int64]bool{}
	for _, sf := range f.srv.Files() {
		if seen[sf.FileID] {
			t.Fatalf("file id %d given twice", sf.FileID)
		}
		seen[sf.FileID] = true
	}
	wantEq(t, "files", len(seen), workers*jobs)
	wantEq(t, "submits counted", f.srv.Requests()["submit"], workers*jobs)
}
