package couch_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// bodyTransport records the path of each request and the size of each
// reply's body.
type bodyTransport struct {
	mu    sync.Mutex
	paths []string
	bytes int64
	rt    http.RoundTripper
}

func (b *bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	b.mu.Lock()
	b.paths = append(b.paths, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	b.bytes += int64(len(body))
	b.mu.Unlock()
	return resp, err
}

func (b *bodyTransport) reset() {
	b.mu.Lock()
	b.paths, b.bytes = nil, 0
	b.mu.Unlock()
}

// TestStore_MonitorReadsOnlyChangedDocuments: the submitted transfers a
// store wrote itself are read back by revision only; a transfer another
// writer changed since (a kill request through another store) is read
// again and seen as changed; every transfer returned equals the stored
// document, as a fresh store reads it.
func TestStore_MonitorReadsOnlyChangedDocuments(t *testing.T) {
	const total = 1200 // more than the store's threshold for reading by revision
	ctx := context.Background()
	c := newClock()
	bt := &bodyTransport{rt: http.DefaultTransport}
	db := newDB(t)
	s := open(t, db, c, "alice", "host:1:a", couch.Options{Transport: bt})
	enqueue(t, s, requests("alice", total))
	claimed := claim(t, s, total)
	cs := make([]state.Commit, total)
	for i, tr := range claimed {
		cs[i] = state.Commit{Transfer: tr, DestPFN: "davs://d.example.org" + tr.DestinationLFN}
	}
	res, err := statetest.Commit(ctx, s, cs, "job-1")
	mustOK(t, res, err)

	// another store (an operator's aso kill) changes one transfer
	killed := claimed[7].ID
	other := open(t, db, c, "alice", "host:2:b", couch.Options{})
	kres, err := other.RequestKill(ctx, []string{killed})
	mustOK(t, kres, err)

	bt.reset()
	jobs, err := s.ActiveTransfersOf(ctx, "alice", []string{"job-1"})
	if err != nil || len(jobs) != 1 || len(jobs[0].Transfers) != total {
		t.Fatalf("ActiveTransfersOf = %d jobs, %v; want 1 job of %d", len(jobs), err, total)
	}
	got := jobs[0].Transfers
	// the reference: the same job read by a store that wrote nothing
	fresh := open(t, db, c, "alice", "host:3:c", couch.Options{})
	want, err := fresh.ActiveTransfersOf(ctx, "alice", []string{"job-1"})
	if err != nil || len(want) != 1 {
		t.Fatalf("fresh ActiveTransfersOf = %v, %v", want, err)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[0].Transfers[i]) {
			t.Fatalf("transfer %s:\n got %+v\nwant %+v", got[i].ID, got[i], want[0].Transfers[i])
		}
		if got[i].ID == killed && !got[i].KillRequested {
			t.Fatalf("transfer %s: the kill request written by another store is not seen", killed)
		}
	}
	// one document body at most was sent: about a kilobyte a transfer
	// would be over a megabyte
	if bt.bytes > 400*total {
		t.Errorf("the read carried %d bytes for %d transfers (%v): the documents were sent again", bt.bytes, total, bt.paths)
	}
}
