package couch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// viewRows returns the rows of the view for the keys [user, part, ...].
func viewRows(t *testing.T, db *kivik.DB, user, part string, extra map[string]any) (keys [][]any, values []json.RawMessage) {
	t.Helper()
	return viewRowsCtx(context.Background(), t, db, user, part, extra)
}

// viewRowsCtx is viewRows with the query's context.
func viewRowsCtx(ctx context.Context, t *testing.T, db *kivik.DB, user, part string, extra map[string]any) (keys [][]any, values []json.RawMessage) {
	t.Helper()
	p := map[string]any{"startkey": []any{user, part}, "endkey": []any{user, part, map[string]any{}}, "reduce": false}
	for k, v := range extra {
		p[k] = v
	}
	rs := db.Query(ctx, couch.ViewsDDoc, "work", kivik.Params(p))
	defer rs.Close()
	for rs.Next() {
		var k []any
		var v json.RawMessage
		if err := rs.ScanKey(&k); err != nil {
			t.Fatal(err)
		}
		if err := rs.ScanValue(&v); err != nil {
			t.Fatal(err)
		}
		keys, values = append(keys, k), append(values, v)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("query view rows %s of %s: %v", part, user, err)
	}
	return keys, values
}

// TestViews checks what the view holds: in the queue rows exactly the
// queue of each user in claim order, with the time each transfer is due;
// in the active rows the submitted transfers by job, with counts and the
// oldest last_update per job.
func TestViews(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	db := rawDB(t, u)
	bob := open(t, u, c, "bob", "host:2:b", couch.Options{})
	enqueue(t, bob, requests("bob", 30))
	alice := open(t, u, c, "alice", "host:1:a", couch.Options{})
	enqueue(t, alice, requests("alice", 22))
	c.Add(time.Second)
	claimed := claim(t, alice, 20)
	res, err := statetest.Commit(ctx, alice, []state.Commit{{Transfer: claimed[0]}, {Transfer: claimed[1]}}, "job-1")
	mustOK(t, res, err)
	c.Add(time.Second)
	res, err = statetest.Commit(ctx, alice, []state.Commit{{Transfer: claimed[2]}}, "job-2")
	mustOK(t, res, err)

	t.Run("queue rows hold the queue of the user in claim order", func(t *testing.T) {
		keys, values := viewRows(t, db, "alice", "queue", nil)
		if got, want := len(keys), 22-3; got != want {
			t.Fatalf("%d rows for alice, want her %d new and acquired transfers", got, want)
		}
		due, prev := 0, ""
		for i, k := range keys {
			ck, _ := k[2].(string)
			if k[0] != "alice" || ck <= prev {
				t.Fatalf("row %d: key %v after %q: not alice's queue in claim key order", i, k, prev)
			}
			prev = ck
			var us int64
			if err := json.Unmarshal(values[i], &us); err != nil {
				t.Fatalf("row %d: value %s is not a time in µs: %v", i, values[i], err)
			}
			if us != 0 && us != c.Now().Add(state.DefaultLeaseTTL).UnixMicro()-time.Second.Microseconds() {
				t.Fatalf("row %d: due at %d µs, want 0 or the end of the lease", i, us)
			}
			if us <= c.Now().UnixMicro() {
				due++
			}
		}
		if due != 2 {
			t.Fatalf("%d rows due now, want the 2 unclaimed (the others hold live leases)", due)
		}
		if keys, _ := viewRows(t, db, "bob", "queue", nil); len(keys) != 30 {
			t.Fatalf("%d rows for bob, want 30", len(keys))
		}
	})

	t.Run("active rows count jobs and find the oldest", func(t *testing.T) {
		keys, values := viewRows(t, db, "alice", "active", map[string]any{"group": true, "reduce": true})
		if len(keys) != 2 || keys[0][2] != "job-1" || keys[1][2] != "job-2" {
			t.Fatalf("groups %v, want job-1 and job-2", keys)
		}
		for i, want := range []struct {
			n  int
			at time.Time
		}{{2, c.Now().Add(-time.Second)}, {1, c.Now()}} {
			var v struct {
				Count int     `json:"count"`
				Min   float64 `json:"min"`
			}
			if err := json.Unmarshal(values[i], &v); err != nil {
				t.Fatal(err)
			}
			if v.Count != want.n || int64(v.Min) != want.at.UnixMicro() {
				t.Fatalf("%v: count %d, min %.0f µs; want %d, %d", keys[i], v.Count, v.Min, want.n, want.at.UnixMicro())
			}
		}
		jobs, err := alice.ActiveJobs(ctx, "alice")
		if err != nil || len(jobs) != 2 || jobs[0] != (state.JobRef{ID: "job-1", Transfers: 2}) || jobs[1] != (state.JobRef{ID: "job-2", Transfers: 1}) {
			t.Fatalf("ActiveJobs = %+v, %v", jobs, err)
		}
	})

	t.Run("active transfers of jobs come in the order asked", func(t *testing.T) {
		jobs, err := alice.ActiveTransfersOf(ctx, "alice", []string{"job-2", "no-such-job", "job-1", "job-2"})
		if err != nil || len(jobs) != 2 || jobs[0].ID != "job-2" || jobs[1].ID != "job-1" {
			t.Fatalf("ActiveTransfersOf = %+v, %v; want job-2 then job-1", jobs, err)
		}
		if got := len(jobs[1].Transfers); got != 2 || jobs[1].Transfers[0].ID > jobs[1].Transfers[1].ID {
			t.Fatalf("job-1 has %d transfers %v, want 2 ordered by file ID then ID", got, jobs[1].Transfers)
		}
		if jobs, err := bob.ActiveTransfersOf(ctx, "bob", []string{"job-1"}); err != nil || len(jobs) != 0 {
			t.Fatalf("bob's transfers in alice's job: %+v, %v", jobs, err)
		}
	})
}

// TestViews_WritesDuringTheQuery: a view query answers with every write
// that completed before it was asked, even when other writes to the same
// documents land while the index is brought up to date (as CouchDB reads
// the changes from one snapshot). Each round claims a fresh batch (the
// claim's own view query comes before its write), then asks for the queue
// while the leases of part of the batch are renewed: no claimed transfer
// may still show as due.
func TestViews_WritesDuringTheQuery(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	db := rawDB(t, u)
	s := open(t, u, c, "bob", "host:2:b", couch.Options{})
	const rounds, batch = 4, 900
	for r := range rounds {
		reqs := requests("bob", batch)
		for i := range reqs {
			reqs[i].SourceLFN += fmt.Sprintf(".%d", r)
			reqs[i].DestinationLFN += fmt.Sprintf(".%d", r)
		}
		enqueue(t, s, reqs)
		claimed, err := statetest.Claim(ctx, s, batch)
		if err != nil || len(claimed) != batch {
			t.Fatalf("round %d: NewTransfers = %d, %v", r, len(claimed), err)
		}
		type renewed struct {
			res []state.Result
			err error
		}
		renew := make(chan renewed, 1)
		sent := make(chan struct{})
		var once sync.Once
		query := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) },
		})
		go func() {
			<-sent // once the query is on its way
			res, err := s.RenewLeases(ctx, claimed[batch-100:])
			renew <- renewed{res, err}
		}()
		_, values := viewRowsCtx(query, t, db, "bob", "queue", nil)
		w := <-renew
		mustOK(t, w.res, w.err)
		due := 0
		for _, v := range values {
			var us int64
			if json.Unmarshal(v, &us) != nil || us <= c.Now().UnixMicro() {
				due++
			}
		}
		if due > 0 {
			t.Fatalf("round %d: %d queue rows due after every transfer was claimed: the view missed claims that completed before the query", r, due)
		}
	}
}

// TestViews_UpdateOption checks the view's update option as the store
// uses it: update=false answers from the index as it is, without the
// transfers written since the last query that brought it up to date;
// lazy answers so and then brings it up to date; the older stale=ok and
// stale=update_after are the same two; any other value is refused with
// CouchDB's 400. Only the refusal is checked on a real CouchDB, whose
// background indexer may bring the index up to date at any time.
func TestViews_UpdateOption(t *testing.T) {
	c := newClock()
	u := newDB(t)
	db := rawDB(t, u)
	s := open(t, u, c, "bob", "host:2:b", couch.Options{})
	for _, p := range []map[string]any{{"update": "sometimes"}, {"stale": "later"}} {
		rs := db.Query(context.Background(), couch.ViewsDDoc, "work", kivik.Params(p))
		_ = rs.Next()
		err := rs.Err()
		_ = rs.Close()
		if kivik.HTTPStatus(err) != http.StatusBadRequest || !strings.Contains(fmt.Sprint(err), "Invalid value for `") {
			t.Errorf("query with %v: %v (status %d), want 400 Invalid value", p, err, kivik.HTTPStatus(err))
		}
	}
	if couchtest.Real() {
		t.Skip("the rest needs an index nothing updates in the background: the test server's")
	}
	reqs := requests("bob", 6)
	enqueue(t, s, reqs[:2])
	if keys, _ := viewRows(t, db, "bob", "queue", nil); len(keys) != 2 {
		t.Fatalf("%d queue rows, want 2", len(keys))
	}
	steps := []struct {
		add   int
		opt   map[string]any
		want  int
		after string
	}{
		{2, map[string]any{"update": false}, 2, "update=false shows the two written since"},
		{0, map[string]any{"update": "lazy"}, 2, "update=lazy answers before it updates"},
		{0, map[string]any{"update": false}, 4, "the lazy query did not update the index after answering"},
		{1, map[string]any{"stale": "ok"}, 4, "stale=ok shows the one written since"},
		{0, map[string]any{"stale": "update_after"}, 4, "stale=update_after answers before it updates"},
		{0, map[string]any{"update": false}, 5, "stale=update_after did not update the index"},
		{1, nil, 6, "a query without the option did not update the index"},
	}
	n := 2
	for i, st := range steps {
		enqueue(t, s, reqs[n:n+st.add])
		n += st.add
		if keys, _ := viewRows(t, db, "bob", "queue", st.opt); len(keys) != st.want {
			t.Fatalf("step %d (%v): %d queue rows, want %d: %s", i, st.opt, len(keys), st.want, st.after)
		}
	}
}
