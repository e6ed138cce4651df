package couch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// overlapping holds the first POST to a path ending in suffix until a
// second one is under way (or until a while has passed), and records
// whether one was.
type overlapping struct {
	rt       http.RoundTripper
	suffix   string
	mu       sync.Mutex
	inFlight int
	overlap  bool
	second   chan struct{}
	held     atomic.Bool
}

func (o *overlapping) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, o.suffix) {
		return o.rt.RoundTrip(r)
	}
	o.mu.Lock()
	o.inFlight++
	if o.inFlight > 1 && !o.overlap {
		o.overlap = true
		close(o.second)
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.inFlight--
		o.mu.Unlock()
	}()
	if o.held.CompareAndSwap(false, true) {
		select {
		case <-o.second:
		case <-time.After(3 * time.Second):
		}
	}
	return o.rt.RoundTrip(r)
}

// commitsOf claims n transfers of alice and returns them as commits.
func commitsOf(t *testing.T, s *couch.Store, n int) ([]state.Transfer, []state.Commit) {
	t.Helper()
	enqueue(t, s, requests("alice", n))
	claimed := claim(t, s, n)
	cs := make([]state.Commit, n)
	for i, tr := range claimed {
		cs[i] = state.Commit{Transfer: tr, DestPFN: "file:///d" + tr.DestinationLFN}
	}
	return claimed, cs
}

// TestStore_PartsOfACallOverlap: a call larger than one _bulk_docs sends
// its next part while the server still works on the one before, so that
// the server does not wait for the agent to encode it, and its results
// still come back in the order of the items.
func TestStore_PartsOfACallOverlap(t *testing.T) {
	const total = 4500 // three _bulk_docs of the store
	ov := &overlapping{rt: http.DefaultTransport, suffix: "/_bulk_docs", second: make(chan struct{})}
	ov.held.Store(true) // not the writes of the queue and the claim
	s := open(t, newDB(t), newClock(), "alice", "host:1:a", couch.Options{Transport: ov})
	claimed, cs := commitsOf(t, s, total)
	ov.held.Store(false) // hold the first write of the commit
	res, err := statetest.Commit(context.Background(), s, cs, "job")
	mustOK(t, res, err)
	ov.mu.Lock()
	overlap := ov.overlap
	ov.mu.Unlock()
	if !overlap {
		t.Errorf("SetTransferID of %d transfers sent its parts one after the other", total)
	}
	for i, r := range res {
		if r.ID != claimed[i].ID || r.Rev == "" || r.Rev == claimed[i].Rev || r.State != state.StateSubmitted {
			t.Fatalf("result %d: %s rev %q state %s; want %s submitted with a new revision", i, r.ID, r.Rev, r.State, claimed[i].ID)
		}
	}
}

// refusing answers the n-th _bulk_docs (from 1) with a 400 that is not
// retried.
type refusing struct {
	rt    http.RoundTripper
	n     int32
	count atomic.Int32
}

func (f *refusing) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_bulk_docs") && f.count.Add(1) == f.n {
		body := `{"error":"bad_request","reason":"refused by the test"}`
		return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Request: r, ContentLength: int64(len(body)),
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
	return f.rt.RoundTrip(r)
}

// TestStore_AFailedPartFailsTheCall: when one part of a call larger than
// one _bulk_docs fails, the call fails with the server's reason; what the
// other parts wrote stands, and a later read sees no transfer changed by
// halves.
func TestStore_AFailedPartFailsTheCall(t *testing.T) {
	const total = 4500
	f := &refusing{rt: http.DefaultTransport, n: -1}
	s := open(t, newDB(t), newClock(), "alice", "host:1:a", couch.Options{Transport: f})
	claimed, cs := commitsOf(t, s, total)
	f.count.Store(0)
	f.n = 2
	res, err := statetest.Commit(context.Background(), s, cs, "job")
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("SetTransferID with a part refused = %d results, %v; want the refusal", len(res), err)
	}
	ids := make([]string, total)
	for i, tr := range claimed {
		ids[i] = tr.ID
	}
	now, err := s.List(context.Background(), state.Filter{User: "alice", IDs: ids})
	if err != nil || len(now) != total {
		t.Fatalf("List = %d, %v; want %d", len(now), err, total)
	}
	rev := map[string]string{}
	for _, tr := range claimed {
		rev[tr.ID] = tr.Rev
	}
	committed := 0
	for _, got := range now {
		switch {
		case got.State == state.StateSubmitted && got.FTSJob == "job":
			committed++
		case got.State == state.StateAcquired && got.FTSJob == "" && got.Rev == rev[got.ID]:
		default:
			t.Fatalf("transfer %s after a failed commit: state %s job %q rev %s", got.ID, got.State, got.FTSJob, got.Rev)
		}
	}
	if committed == 0 || committed == total {
		t.Errorf("%d of %d committed after one part of three was refused; want the other parts' only", committed, total)
	}
}

// TestStore_ReadsByIDOverlap: a read by ID of more transfers than one
// _all_docs request carries (the revision check, the documents) sends its
// parts at once, and finds each transfer that exists, whichever part holds
// it, at its revision.
func TestStore_ReadsByIDOverlap(t *testing.T) {
	for name, read := range map[string]func(*couch.Store, []string) (map[string]string, error){
		"revisions": func(s *couch.Store, ids []string) (map[string]string, error) {
			return couch.Revisions(s, context.Background(), ids)
		},
		"documents": func(s *couch.Store, ids []string) (map[string]string, error) {
			docs, err := couch.ReadKeys(s, context.Background(), ids)
			revs := map[string]string{}
			for id, raw := range docs {
				var d struct {
					Rev string `json:"_rev"`
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					return nil, err
				}
				revs[id] = d.Rev
			}
			return revs, err
		},
	} {
		t.Run(name, func(t *testing.T) { readsOverlap(t, read) })
	}
}

func readsOverlap(t *testing.T, read func(*couch.Store, []string) (map[string]string, error)) {
	ov := &overlapping{rt: http.DefaultTransport, suffix: "/_all_docs", second: make(chan struct{})}
	ov.held.Store(true) // not the reads of the claim
	s := open(t, newDB(t), newClock(), "alice", "host:1:a", couch.Options{Transport: ov})
	enqueue(t, s, requests("alice", 4))
	claimed := claim(t, s, 4)
	ids := make([]string, 0, couch.MaxReadKeys+10)
	for i := range couch.MaxReadKeys + 6 {
		ids = append(ids, fmt.Sprintf("missing-%05d", i))
		if i == 3 || i == couch.MaxReadKeys+2 { // one in each part
			ids = append(ids, claimed[0].ID, claimed[1].ID)
		}
	}
	ov.held.Store(false)
	revs, err := read(s, ids)
	if err != nil {
		t.Fatal(err)
	}
	ov.mu.Lock()
	overlap := ov.overlap
	ov.mu.Unlock()
	if !overlap {
		t.Errorf("%d IDs were read one request after the other", len(ids))
	}
	want := map[string]string{claimed[0].ID: claimed[0].Rev, claimed[1].ID: claimed[1].Rev}
	if !maps.Equal(revs, want) {
		t.Errorf("read %v, want %v", revs, want)
	}
}
