package couch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
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

// withoutValidation runs f with the design document of validate_doc_update
// removed: replication between the replicas of a cluster makes leaves
// that no single write could (a done next to a failed).
func withoutValidation(t *testing.T, db *kivik.DB, f func()) {
	t.Helper()
	ctx := context.Background()
	var ddoc map[string]any
	if err := db.Get(ctx, couch.DesignID).ScanDoc(&ddoc); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, couch.DesignID, ddoc["_rev"].(string)); err != nil {
		t.Fatal(err)
	}
	f()
	delete(ddoc, "_rev")
	if _, err := db.Put(ctx, couch.DesignID, ddoc); err != nil {
		t.Fatal(err)
	}
}

// branch stores doc (a transfer or a lock) as a leaf revision rev
// (generation 2) on the revision parent of its document (new_edits=false),
// as a replica of a partitioned cluster would.
func branch(t *testing.T, db *kivik.DB, doc any, parent, hash string) string {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	_, ph, _ := strings.Cut(parent, "-")
	rev := "2-" + hash
	m["_rev"], m["_revisions"] = rev, map[string]any{"start": 2, "ids": []string{hash, ph}}
	res, err := db.BulkDocs(context.Background(), []any{m}, kivik.Param("new_edits", false))
	if err != nil {
		t.Fatalf("new_edits=false: %v", err)
	}
	for _, r := range res {
		if r.Error != nil {
			t.Fatalf("new_edits=false: %v", r.Error)
		}
	}
	return rev
}

// leaves returns the _conflicts of the stored document id.
func conflictsOf(t *testing.T, db *kivik.DB, id string) []string {
	t.Helper()
	var d struct {
		Conflicts []string `json:"_conflicts"`
	}
	if err := db.Get(context.Background(), id, kivik.Param("conflicts", true)).ScanDoc(&d); err != nil {
		t.Fatal(err)
	}
	return d.Conflicts
}

func TestStore_ResolvesConflicts(t *testing.T) {
	ctx := context.Background()
	const me, other = "host:1:me", "host:2:other"
	a := func(hash string) string { return strings.Repeat(hash, 32) }
	for _, tc := range []struct {
		name string
		// the two leaves; the second has the greater revision, so CouchDB
		// picks it as the winner
		first, second func(t *state.Transfer, now time.Time)
		want          state.State
		wantOwner     string
		wantKill      bool
	}{
		{
			name: "done never loses to a later failed",
			first: func(t *state.Transfer, now time.Time) {
				t.Transition(state.StateDone, now, me, "")
			},
			second: func(t *state.Transfer, now time.Time) {
				t.Transition(state.StateFailed, now.Add(time.Minute), other, "destination file exists")
			},
			want: state.StateDone,
		},
		{
			name: "the lock holder's claim wins an equal one",
			first: func(t *state.Transfer, now time.Time) {
				_ = state.Claim(t, state.Agent{User: "alice", Owner: me}, now, time.Hour)
			},
			second: func(t *state.Transfer, now time.Time) {
				_ = state.Claim(t, state.Agent{User: "alice", Owner: other}, now.Add(time.Second), time.Hour)
			},
			want: state.StateAcquired, wantOwner: me,
		},
		{
			name: "a prepared submission wins a bare claim, and a kill request is kept",
			first: func(t *state.Transfer, now time.Time) {
				_ = state.Claim(t, state.Agent{User: "alice", Owner: other}, now, time.Hour)
				t.SubmitSID = "sid-1"
			},
			second: func(t *state.Transfer, now time.Time) {
				t.KillRequested = true
				t.LastUpdate = state.At(now.Add(time.Minute))
			},
			want: state.StateAcquired, wantOwner: other, wantKill: true,
		},
		{
			name: "a done leaf wins over the winner's kill request, which it does not need",
			first: func(t *state.Transfer, now time.Time) {
				_ = state.Claim(t, state.Agent{User: "alice", Owner: me}, now, time.Hour)
				t.Transition(state.StateDone, now, me, "")
			},
			second: func(t *state.Transfer, now time.Time) {
				t.KillRequested = true
				t.LastUpdate = state.At(now.Add(time.Minute))
			},
			want: state.StateDone, wantOwner: me,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			u := newDB(t)
			enqueue(t, open(t, couchtest.AsRole(t, u, couch.RoleProducer), c, "", "", couch.Options{}), requests("alice", 1))
			s := open(t, couchtest.AsRole(t, u, couch.RoleAgent), c, "alice", me, couch.Options{})
			db := rawDB(t, u)
			id := requests("alice", 1)[0].ID()
			base, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			x, y := base, base
			x.History, y.History = append([]state.Transition(nil), base.History...), append([]state.Transition(nil), base.History...)
			tc.first(&x, c.Now())
			tc.second(&y, c.Now())
			withoutValidation(t, db, func() {
				branch(t, db, x, base.Rev, a("1"))
				branch(t, db, y, base.Rev, a("f"))
			})
			if n := len(conflictsOf(t, db, id)); n != 1 {
				t.Fatalf("setup: %d conflicting revisions, want 1", n)
			}

			got, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want || tc.wantOwner != "" && got.Owner != tc.wantOwner || got.KillRequested != tc.wantKill {
				t.Fatalf("resolved to %s owner %q kill %v, want %s owner %q kill %v", got.State, got.Owner, got.KillRequested, tc.want, tc.wantOwner, tc.wantKill)
			}
			last := got.History[len(got.History)-1]
			if !strings.HasPrefix(last.Reason, "conflict resolved") || last.By != me {
				t.Fatalf("the resolution is not in the history: %+v", last)
			}
			// the agent deletes nothing: the other leaf stays, set aside
			left := conflictsOf(t, db, id)
			superseded, _ := getRaw(t, db, id)["superseded_revs"].([]any)
			if len(left) != 1 || !slices.Contains(superseded, any(left[0])) {
				t.Fatalf("after the resolution: conflicts %v, superseded %v; want the loser left and set aside", left, superseded)
			}
			stored, err := s.Get(ctx, id)
			if err != nil || stored.Rev != got.Rev {
				t.Fatalf("a second read changed the document: %s -> %s, %v", got.Rev, stored.Rev, err)
			}
			op := open(t, couchtest.AsRole(t, u, couch.RoleOperator), c, "", "operator@host:cli", couch.Options{})
			rep, err := op.ResolveConflicts(ctx, "")
			if err != nil || rep.Deleted != 1 || rep.Resolved != 0 || len(rep.Left) != 0 {
				t.Fatalf("aso resolve-conflicts: %+v, %v; want the set-aside leaf deleted, nothing decided again", rep, err)
			}
			if left := conflictsOf(t, db, id); len(left) != 0 {
				t.Fatalf("conflicts left after aso resolve-conflicts: %v", left)
			}
			if after, err := s.Get(ctx, id); err != nil || after.Rev != got.Rev || after.State != got.State {
				t.Fatalf("aso resolve-conflicts changed the winner: %s %s -> %s %s, %v", got.Rev, got.State, after.Rev, after.State, err)
			}
		})
	}
}

func TestStore_SummaryCountsConflicts(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	s := open(t, u, c, "", "", couch.Options{}) // an operator's store resolves nothing
	enqueue(t, s, requests("alice", 3))
	db := rawDB(t, u)
	id := requests("alice", 3)[1].ID()
	base, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	x := base
	withoutValidation(t, db, func() {
		x.Priority = 7
		branch(t, db, x, base.Rev, strings.Repeat("a", 32))
		x.Priority = 8
		branch(t, db, x, base.Rev, strings.Repeat("b", 32))
	})
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Conflicted != 1 || sum.Superseded != 0 || sum.Total != 3 {
		t.Fatalf("summary: %d conflicted, %d superseded of %d, want 1, 0 of 3", sum.Conflicted, sum.Superseded, sum.Total)
	}
	if n := len(conflictsOf(t, db, id)); n != 1 {
		t.Fatalf("an operator's read resolved the conflict (%d left)", n)
	}
	// the agent's read decides the conflict; its set-aside leaf is counted
	// apart until aso resolve-conflicts deletes it
	agent := open(t, couchtest.AsRole(t, u, couch.RoleAgent), c, "alice", "host:1:a", couch.Options{})
	if _, err := agent.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if sum, err = s.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Conflicted != 0 || sum.Superseded != 1 {
		t.Fatalf("summary after the agent's read: %d conflicted, %d superseded (%v), want 0, 1", sum.Conflicted, sum.Superseded, err)
	}
	op := open(t, couchtest.AsRole(t, u, couch.RoleOperator), c, "", "operator@host:cli", couch.Options{})
	if _, err := op.ResolveConflicts(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if sum, err = s.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Conflicted != 0 || sum.Superseded != 0 {
		t.Fatalf("summary after aso resolve-conflicts: %d conflicted, %d superseded (%v), want none", sum.Conflicted, sum.Superseded, err)
	}
}

// newCluster returns a fresh database behind a two-coordinator proxy.
func newCluster(t *testing.T) (context.Context, *clock, string, *couchtest.Cluster) {
	t.Helper()
	u := newDB(t)
	return context.Background(), newClock(), u, couchtest.NewCluster(t, u, time.Minute)
}

// TestLock_Accepted202IsNotALock: a lock written with 202 counts as held by
// another, and the agent (who may not delete) releases the revision it
// wrote, so that it holds no one off.
func TestLock_Accepted202IsNotALock(t *testing.T) {
	ctx, c, u, cl := newCluster(t)
	s := open(t, couchtest.AsRole(t, cl.URL(0), couch.RoleAgent), c, "alice", "host:1:a", couch.Options{})

	cl.Accept202.Store(true)
	_, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute)
	if !errors.Is(err, state.ErrLocked) {
		t.Fatalf("AcquireLock answered 202: %v, want ErrLocked", err)
	}
	var left map[string]any
	if err := rawDB(t, u).Get(ctx, state.LockID("alice")).ScanDoc(&left); err != nil || left["expire"] != nil {
		t.Fatalf("the revision written with 202 was left live: %v (%v)", left, err)
	}

	cl.Accept202.Store(false)
	l, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute)
	if err != nil {
		t.Fatalf("AcquireLock answered 201: %v", err)
	}
	cl.Accept202.Store(true)
	if _, err := s.RenewLock(ctx, l, time.Minute); !errors.Is(err, state.ErrLockLost) {
		t.Fatalf("RenewLock answered 202: %v, want ErrLockLost", err)
	}
}

func TestLock_TwoCoordinators(t *testing.T) {
	ctx, c, _, cl := newCluster(t)
	a := open(t, cl.URL(0), c, "alice", "host:1:a", couch.Options{})
	b := open(t, cl.URL(1), c, "alice", "host:2:b", couch.Options{})

	la, err := a.AcquireLock(ctx, "alice", "host:1:a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// b does not see a's lock yet; its write is stored as a conflicting
	// revision and answered 202
	_, err = b.AcquireLock(ctx, "alice", "host:2:b", time.Minute)
	if !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second agent through the other coordinator: %v, want ErrLocked", err)
	}
	if cl.Branched.Load() == 0 {
		t.Fatal("the proxy made no conflicting revision: the test tests nothing")
	}
	if _, err := a.RenewLock(ctx, la, time.Minute); err != nil {
		t.Fatalf("the quorum holder's renewal: %v", err)
	}
	if _, err := b.AcquireLock(ctx, "alice", "host:2:b", time.Minute); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second agent, later: %v, want ErrLocked", err)
	}
}

// TestClaims_Accepted202 claims through a proxy that answers 202: claims
// that read back as the document's only leaf are ours; those that another
// coordinator's write contradicts are not, and are never returned.
func TestClaims_Accepted202(t *testing.T) {
	ctx, c, u, cl := newCluster(t)
	enqueue(t, open(t, couchtest.AsRole(t, u, couch.RoleProducer), c, "", "", couch.Options{}), requests("alice", 6))
	s := open(t, couchtest.AsRole(t, cl.URL(0), couch.RoleAgent), c, "alice", "host:1:a", couch.Options{})

	cl.Accept202.Store(true)
	got, err := statetest.Claim(ctx, s, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claims answered 202 without a conflict: %d, %v; want 3 (they read back as ours)", len(got), err)
	}

	cl.Sibling = func(doc map[string]any) map[string]any {
		h, _ := doc["history"].([]any)
		if len(h) == 0 || doc["owner"] != "host:1:a" {
			return nil
		}
		if last, _ := h[len(h)-1].(map[string]any); last["from"] != "new" || last["to"] != "acquired" {
			return nil // not a claim
		}
		d := map[string]any{}
		for k, v := range doc {
			d[k] = v
		}
		d["owner"] = "host:2:b"
		return d
	}
	got, err = statetest.Claim(ctx, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Branched.Load() == 0 {
		t.Fatal("the proxy made no conflicting revision: the test tests nothing")
	}
	if len(got) != 0 {
		t.Fatalf("claims contradicted by another coordinator were confirmed: %d (two agents would submit them)", len(got))
	}
	cl.Sibling = nil
	// every conflict was decided (its losers set aside) and aso
	// resolve-conflicts deletes them
	db := rawDB(t, u)
	for _, r := range requests("alice", 6) {
		superseded, _ := getRaw(t, db, r.ID())["superseded_revs"].([]any)
		for _, rev := range conflictsOf(t, db, r.ID()) {
			if !slices.Contains(superseded, any(rev)) {
				t.Errorf("transfer %s: conflicting revision %s is not set aside (superseded %v)", r.ID(), rev, superseded)
			}
		}
	}
	op := open(t, couchtest.AsRole(t, u, couch.RoleOperator), c, "", "operator@host:cli", couch.Options{})
	if rep, err := op.ResolveConflicts(ctx, "alice"); err != nil || rep.Resolved != 0 || len(rep.Left) != 0 {
		t.Fatalf("aso resolve-conflicts: %+v, %v", rep, err)
	}
	for _, r := range requests("alice", 6) {
		if n := len(conflictsOf(t, db, r.ID())); n != 0 {
			var m map[string]any
			_ = db.Get(ctx, r.ID(), kivik.Param("conflicts", true)).ScanDoc(&m)
			t.Errorf("transfer %s: %d conflicts left: %v", r.ID(), n, m)
		}
	}
}

// TestEnqueue_Accepted202 enqueues through a proxy that answers 202: a
// request read back as written is stored; one whose write never reached a
// replica that kept it is reported not stored, naming the 202, and can be
// enqueued again.
func TestEnqueue_Accepted202(t *testing.T) {
	ctx, c, _, cl := newCluster(t)
	s := open(t, cl.URL(0), c, "", "", couch.Options{})
	cl.Accept202.Store(true)
	enqueue(t, s, requests("alice", 3)) // every one read back: stored

	reqs := requests("bob", 3)
	lost := reqs[1].ID()
	cl.Lost = func(doc map[string]any) bool { return doc["_id"] == lost }
	res, err := s.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		switch {
		case i == 1 && (r.Status != state.Rejected || r.Err == nil || !strings.Contains(r.Err.Error(), "202")):
			t.Errorf("the write answered 202 and not stored: %s %v, want not stored, naming the 202", r.Status, r.Err)
		case i != 1 && r.Status != state.Stored:
			t.Errorf("request %d: %s %v, want stored", i, r.Status, r.Err)
		}
	}
	if _, err := s.Get(ctx, lost); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("the lost request: %v, want not found (the proxy stored it: the test tests nothing)", err)
	}
	cl.Lost = nil
	if res, err := s.Enqueue(ctx, reqs[1:2]); err != nil || res[0].Status != state.Stored {
		t.Fatalf("enqueued again: %+v, %v; want stored", res, err)
	}
}

// TestLock_LiveLeafOfAnotherHolder: a lock document whose winning revision
// is free but one of whose losing leaves is another agent's live lock (a
// write that reached a minority of the replicas, of an agent that has not
// given it up) is a lock: a third agent does not take it.
func TestLock_LiveLeafOfAnotherHolder(t *testing.T) {
	ctx, c, u, _ := newCluster(t)
	db := rawDB(t, u)
	free := state.LockDoc{ID: state.LockID("alice"), Type: state.LockDocType, User: "alice", Holder: "host:0:z"}
	base, err := db.Put(ctx, free.ID, free)
	if err != nil {
		t.Fatal(err)
	}
	held := free
	held.Holder, held.Expire = "host:2:b", state.At(c.Now().Add(time.Hour))
	branch(t, db, held, base, strings.Repeat("a", 32)) // the losing leaf
	branch(t, db, free, base, strings.Repeat("b", 32)) // CouchDB's winner
	var win state.LockDoc
	if err := db.Get(ctx, free.ID).ScanDoc(&win); err != nil || win.Holder != "host:0:z" || !win.Expire.IsZero() {
		t.Fatalf("winning revision %+v, %v; want the free lock (the test tests nothing)", win, err)
	}
	s := open(t, u, c, "alice", "host:1:a", couch.Options{})
	_, err = s.AcquireLock(ctx, "alice", "host:1:a", time.Minute)
	var le *state.LockedError
	if !errors.As(err, &le) || le.Holder != "host:2:b" {
		t.Fatalf("AcquireLock with another holder's live lock on a losing leaf: %v, want locked by host:2:b", err)
	}
	c.Add(2 * time.Hour) // that lock expired: the lock is free on every leaf
	if _, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute); err != nil {
		t.Fatalf("AcquireLock once the leaf's lock expired: %v", err)
	}
}

// TestLock_ReadsFromTheReadQuorum: on a database that reports a cluster
// (n=3, r=2 in its information), the lock is read with the cluster's read
// quorum, so that an agent does not take a free lock one replica shows
// while another holds it through the others; on one node it is not.
func TestLock_ReadsFromTheReadQuorum(t *testing.T) {
	for _, cluster := range []bool{true, false} {
		var mu sync.Mutex
		var lockReads []string
		at := reportingCluster(t, newDB(t), cluster, func(r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+state.LockID("alice")) {
				mu.Lock()
				lockReads = append(lockReads, r.URL.RawQuery)
				mu.Unlock()
			}
		})
		s := open(t, at, newClock(), "alice", "host:1:a", couch.Options{})
		if _, err := s.AcquireLock(context.Background(), "alice", "host:1:a", time.Minute); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		reads := slices.Clone(lockReads)
		mu.Unlock()
		if len(reads) == 0 {
			t.Fatalf("cluster %v: the lock was never read", cluster)
		}
		for _, q := range reads {
			v, _ := url.ParseQuery(q)
			if want := map[bool]string{true: "2", false: ""}[cluster]; v.Get("r") != want {
				t.Errorf("cluster %v: lock read with %q, want r=%q", cluster, q, want)
			}
		}
	}
}

// reportingCluster returns the URL of a proxy to the database u whose
// information reports a cluster (n=3, r=2) if cluster; seen is told of
// every request answered.
func reportingCluster(t *testing.T, u string, cluster bool, seen func(*http.Request)) string {
	t.Helper()
	tu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	db := tu.Path
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: tu.Scheme, Host: tu.Host})
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		seen(r)
		if r.Method != http.MethodGet || r.URL.Path != db || !cluster || resp.StatusCode != http.StatusOK {
			return nil
		}
		var info map[string]any
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || json.Unmarshal(b, &info) != nil {
			return fmt.Errorf("database information: %v", err)
		}
		info["cluster"] = map[string]int{"q": 2, "n": 3, "w": 2, "r": 2}
		b, _ = json.Marshal(info)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	pu, _ := url.Parse(srv.URL + db)
	pu.User = tu.User
	return pu.String()
}

// TestClaims_LostAreContended: claims answered 202 that never reached a
// quorum read back as not ours; the claim says how many due transfers it
// could not confirm, and they are still new.
func TestClaims_LostAreContended(t *testing.T) {
	ctx, c, u, cl := newCluster(t)
	enqueue(t, open(t, u, c, "", "", couch.Options{}), requests("alice", 4))
	s := open(t, cl.URL(0), c, "alice", "host:1:a", couch.Options{})
	cl.Lost = func(doc map[string]any) bool { return doc["state"] == "acquired" }
	got, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Transfers) != 0 || got.Contended != 4 {
		t.Fatalf("claims lost by the cluster: %d claimed, %d contended; want 0 and 4", len(got.Transfers), got.Contended)
	}
	for _, r := range requests("alice", 4) {
		if tr, err := s.Get(ctx, r.ID()); err != nil || tr.State != state.StateNew {
			t.Errorf("%s: %s, %v; want new", r.ID(), tr.State, err)
		}
	}
}

// TestUnlock_Retries202: an unlock whose write is answered 202 (fewer
// replicas than the quorum) is written again until a quorum holds it: the
// lock is released, not left held with an error.
func TestUnlock_Retries202(t *testing.T) {
	ctx, c, _, cl := newCluster(t)
	s := open(t, cl.URL(0), c, "alice", "host:1:a", couch.Options{})
	if _, err := s.AcquireLock(ctx, "alice", "host:1:a", time.Minute); err != nil {
		t.Fatal(err)
	}
	cl.Accept202Next.Store(2)
	if err := s.Unlock(ctx, "alice", "host:1:a", "released by the operator"); err != nil {
		t.Fatalf("Unlock with its first writes answered 202: %v", err)
	}
	ls, err := s.Locks(ctx, "alice")
	if err != nil || len(ls) != 1 || !ls[0].Expire.IsZero() || ls[0].LastRun == nil || ls[0].LastRun.Error != "released by the operator" {
		t.Fatalf("lock after the unlock: %+v, %v", ls, err)
	}
}

// TestSummary_ShowsTheAgentsOwnWrites: a summary of a user read through a
// coordinator whose scans lag behind the writes (one copy of each shard)
// still counts the transfers as the agent last wrote them: those the scan
// shows unfinished are read again by ID.
func TestSummary_ShowsTheAgentsOwnWrites(t *testing.T) {
	ctx, c, u, cl := newCluster(t)
	enqueue(t, open(t, u, c, "", "", couch.Options{}), requests("alice", 3))
	s := open(t, cl.URL(0), c, "alice", "host:1:a", couch.Options{})
	cl.ScanLag.Store(int64(time.Hour))
	if sum, err := s.Summary(ctx, state.SummaryOptions{User: "alice"}); err != nil || sum.ByState[state.StateNew] != 3 {
		t.Fatalf("summary before the claims: %+v, %v", sum.ByState, err)
	}
	got, err := statetest.Claim(ctx, s, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("claims: %d, %v", len(got), err)
	}
	res, err := statetest.Commit(ctx, s, []state.Commit{{Transfer: got[0], DestPFN: "file:///d"}}, "job-1")
	mustOK(t, res, err)
	sum, err := s.Summary(ctx, state.SummaryOptions{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ByState[state.StateSubmitted] != 1 || sum.ByState[state.StateAcquired] != 2 || sum.ByState[state.StateNew] != 0 {
		t.Errorf("summary after the writes, through a lagging scan: %v; want 1 submitted and 2 acquired", sum.ByState)
	}
}
