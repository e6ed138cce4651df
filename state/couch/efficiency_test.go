package couch_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

// countingTransport counts the HTTP requests that pass through it.
type countingTransport struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestStore_RequestsPerTransfer proves the calls are bulk: the HTTP
// requests per transfer of each phase stay far below one.
func TestStore_RequestsPerTransfer(t *testing.T) {
	const total, batch = 2000, 500
	const bound = 0.02 // requests per transfer and phase
	ctx := context.Background()
	c := newClock()
	ct := &countingTransport{rt: http.DefaultTransport}
	s := open(t, newDB(t), c, "alice", "host:1:a", couch.Options{Transport: ct})
	enqueue(t, s, requests("alice", total))

	phase := func(name string, f func()) {
		t.Helper()
		before, start := ct.n.Load(), time.Now()
		f()
		n := ct.n.Load() - before
		t.Logf("%s took %v", name, time.Since(start))
		per := float64(n) / total
		t.Logf("%-9s %3d requests for %d transfers in batches of %d: %.4f per transfer", name, n, total, batch, per)
		if per > bound {
			t.Errorf("%s: %.4f requests per transfer, want <= %.2f", name, per, bound)
		}
	}
	var claimed []state.Transfer
	phase("claim", func() {
		for len(claimed) < total {
			got, err := statetest.Claim(ctx, s, batch)
			if err != nil || len(got) == 0 {
				t.Fatalf("NewTransfers after %d: %d, %v", len(claimed), len(got), err)
			}
			claimed = append(claimed, got...)
		}
	})
	phase("commit", func() {
		for i := 0; i < total; i += batch {
			cs := make([]state.Commit, 0, batch)
			for _, tr := range claimed[i : i+batch] {
				cs = append(cs, state.Commit{Transfer: tr, DestPFN: "file:///d" + tr.DestinationLFN})
			}
			res, err := statetest.Commit(ctx, s, cs, "job")
			mustOK(t, res, err)
		}
	})
	var active []state.Transfer
	phase("active", func() {
		jobs, err := statetest.Active(ctx, s, "alice")
		if err != nil || len(jobs) != 1 {
			t.Fatalf("ActiveTransfers: %d jobs, %v", len(jobs), err)
		}
		active = jobs[0].Transfers
	})
	if len(active) != total {
		t.Fatalf("%d active, want %d", len(active), total)
	}
	phase("progress", func() {
		for i := 0; i < total; i += batch {
			items := make([]state.Transient, 0, batch)
			for k, tr := range active[i : i+batch] {
				items = append(items, state.Transient{Transfer: tr, Progress: state.Progress{FTSState: "ACTIVE", Bytes: int64(k)}})
			}
			res, err := s.SetTransientState(ctx, items)
			mustOK(t, res, err)
			for k := range res {
				active[i+k].Rev = res[k].Rev
			}
		}
	})
	phase("terminal", func() {
		for i := 0; i < total; i += batch {
			outs := make([]state.Terminal, 0, batch)
			for _, tr := range active[i : i+batch] {
				outs = append(outs, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job"})
			}
			res, err := s.SetTerminalState(ctx, outs)
			mustOK(t, res, err)
		}
	})
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil || sum.ByState[state.StateDone] != total {
		t.Fatalf("%v done, %v; want %d", sum.ByState, err, total)
	}
}

// TestStore_CallsLargerThanOneRequest: a call with more transfers than one
// request carries is split, and its per-item results still come back in
// the order of the items.
func TestStore_CallsLargerThanOneRequest(t *testing.T) {
	const total = 2600 // more than one _bulk_docs of the store
	ctx := context.Background()
	c := newClock()
	ct := &countingTransport{rt: http.DefaultTransport}
	s := open(t, newDB(t), c, "alice", "host:1:a", couch.Options{Transport: ct})
	enqueue(t, s, requests("alice", total))
	claimed, err := statetest.Claim(ctx, s, total)
	if err != nil || len(claimed) != total {
		t.Fatalf("NewTransfers = %d, %v; want %d", len(claimed), err, total)
	}
	cs := make([]state.Commit, total)
	for i, tr := range claimed {
		cs[i] = state.Commit{Transfer: tr, DestPFN: "file:///d" + tr.DestinationLFN}
	}
	before := ct.n.Load()
	res, err := statetest.Commit(ctx, s, cs, "job")
	mustOK(t, res, err)
	if n := ct.n.Load() - before; n != 2 {
		t.Errorf("SetTransferID of %d transfers made %d requests, want 2", total, n)
	}
	for i, r := range res {
		if r.ID != claimed[i].ID || r.Rev == "" || r.Rev == claimed[i].Rev {
			t.Fatalf("result %d: %s rev %q; want %s with a new revision", i, r.ID, r.Rev, claimed[i].ID)
		}
	}
	jobs, err := statetest.Active(ctx, s, "alice")
	if err != nil || len(jobs) != 1 || len(jobs[0].Transfers) != total {
		t.Fatalf("ActiveTransfers = %d jobs, %v; want 1 job of %d", len(jobs), err, total)
	}
	for _, tr := range jobs[0].Transfers {
		if tr.State != state.StateSubmitted || tr.Rev != res[indexOf(claimed, tr.ID)].Rev {
			t.Fatalf("active transfer %s: state %s rev %s, not the committed revision", tr.ID, tr.State, tr.Rev)
		}
	}
}

func indexOf(ts []state.Transfer, id string) int {
	for i := range ts {
		if ts[i].ID == id {
			return i
		}
	}
	return -1
}

// viewReads records, for each request to the view, whether it asked for
// the index as it is (update=false).
type viewReads struct {
	mu    sync.Mutex
	stale []bool
	rt    http.RoundTripper
}

func (v *viewReads) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/_view/") {
		v.mu.Lock()
		v.stale = append(v.stale, r.URL.Query().Get("update") == "false")
		v.mu.Unlock()
	}
	return v.rt.RoundTrip(r)
}

func (v *viewReads) take() []bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.stale
	v.stale = nil
	return out
}

// TestStore_ClaimsGoOnDownTheQueue: within state.StaleClaimWindow of a
// claim from the head of the queue, a claim reads the view as the server
// last indexed it (it does not wait for the index of the claims before),
// starting where the last claim stopped; when that leaves it short it
// reads the head afresh, and so does the first claim after the window.
func TestStore_ClaimsGoOnDownTheQueue(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	vr := &viewReads{rt: http.DefaultTransport}
	s := open(t, newDB(t), c, "alice", "host:1:a", couch.Options{Transport: vr})
	enqueue(t, s, requests("alice", 30))
	claim := func(limit, n int, want []bool, why string) {
		t.Helper()
		vr.take()
		if got, err := statetest.Claim(ctx, s, limit); err != nil || len(got) != n {
			t.Fatalf("NewTransfers(%d) = %d, %v; want %d", limit, len(got), err, n)
		}
		if got := vr.take(); !slices.Equal(got, want) {
			t.Errorf("view reads (true: update=false) %v, want %v: %s", got, want, why)
		}
	}
	claim(10, 10, []bool{false}, "the first claim reads the head")
	claim(10, 10, []bool{true}, "the second goes on down the queue as indexed")
	c.Add(state.StaleClaimWindow)
	claim(5, 5, []bool{false}, "the window has passed")
	claim(4, 4, []bool{true}, "a new window")
	claim(2, 1, []bool{true, false}, "one transfer is left down the queue, short of the claim: the head is read afresh")
}
