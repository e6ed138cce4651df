package couch_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// pathLog records the method and path of each request that passes
// through it, with whether it asked for documents.
type pathLog struct {
	mu   sync.Mutex
	reqs []string
	rt   http.RoundTripper
}

func (p *pathLog) RoundTrip(r *http.Request) (*http.Response, error) {
	what := r.Method + " " + r.URL.Path[strings.LastIndex(r.URL.Path, "/"):]
	if strings.Contains(r.URL.Path, "/_view/") {
		what = r.Method + " _view"
	}
	if r.URL.Query().Get("include_docs") == "true" {
		what += " with documents"
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, what)
	p.mu.Unlock()
	return p.rt.RoundTrip(r)
}

func (p *pathLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reqs
	p.reqs = nil
	return out
}

// TestClaims_ReadTheDocumentsWithTheQueue: on a single node a claim of a
// queue of due transfers reads their documents with the rows of the view
// (two requests: the view, the write); what it claims is the stored
// revision. A cluster's claim (its database information says n=3, r=2)
// reads them by ID, from a quorum.
func TestClaims_ReadTheDocumentsWithTheQueue(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cluster bool
		want    []string
	}{
		{"single node", false, []string{"GET _view with documents", "POST /_bulk_docs"}},
		{"cluster", true, []string{"GET _view", "POST /_all_docs with documents", "POST /_bulk_docs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			u := newDB(t)
			enqueue(t, open(t, u, c, "", "", couch.Options{}), requests("alice", 30))
			at := reportingCluster(t, u, tc.cluster, func(*http.Request) {})
			pl := &pathLog{rt: http.DefaultTransport}
			s := open(t, at, c, "alice", "host:1:a", couch.Options{Transport: pl})
			pl.take()
			for range 3 {
				got, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10})
				if err != nil || len(got.Transfers) != 10 || got.Contended != 0 {
					t.Fatalf("NewTransfers(10) = %d claimed, %d contended, %v; want 10", len(got.Transfers), got.Contended, err)
				}
				if reqs := pl.take(); !slices.Equal(reqs, tc.want) {
					t.Fatalf("requests of a claim: %q, want %q", reqs, tc.want)
				}
				for _, tr := range got.Transfers {
					stored, err := s.Get(ctx, tr.ID)
					if err != nil || stored.Rev != tr.Rev || stored.State != state.StateAcquired || stored.Owner != "host:1:a" {
						t.Fatalf("claimed %s rev %s; stored %s %s by %q, %v", tr.ID, tr.Rev, stored.Rev, stored.State, stored.Owner, err)
					}
				}
				pl.take()
			}
		})
	}
}

// TestClaims_ResolveTheConflictsTheQueueShows: a queued transfer with a
// conflicting revision, read with the rows of the view, is resolved before
// it is claimed: the kill request of the losing leaf is kept, so the
// claim settles it instead of claiming it, and the loser is set aside.
func TestClaims_ResolveTheConflictsTheQueueShows(t *testing.T) {
	ctx := context.Background()
	const me = "host:1:me"
	c := newClock()
	u := newDB(t)
	enqueue(t, open(t, couchtest.AsRole(t, u, couch.RoleProducer), c, "", "", couch.Options{}), requests("alice", 1))
	pl := &pathLog{rt: http.DefaultTransport}
	s := open(t, couchtest.AsRole(t, u, couch.RoleAgent), c, "alice", me, couch.Options{Transport: pl})
	db := rawDB(t, u)
	id := requests("alice", 1)[0].ID()
	base, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	killed, plain := base, base
	killed.KillRequested = true
	plain.Priority = 1 // the winner (the greater revision) only moves up the queue
	withoutValidation(t, db, func() {
		branch(t, db, killed, base.Rev, strings.Repeat("1", 32))
		branch(t, db, plain, base.Rev, strings.Repeat("f", 32))
	})
	if n := len(conflictsOf(t, db, id)); n != 1 {
		t.Fatalf("setup: %d conflicting revisions, want 1", n)
	}
	pl.take()
	got, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if reqs := pl.take(); slices.Contains(reqs, "POST /_all_docs with documents") {
		t.Fatalf("the claim read the document by ID: %q", reqs)
	}
	if len(got.Transfers) != 0 || len(got.Settled) != 1 || got.Settled[0].State != state.StateKilled {
		t.Fatalf("claimed %d, settled %+v; want the transfer settled killed (the losing leaf's kill request kept)", len(got.Transfers), got.Settled)
	}
	stored, err := s.Get(ctx, id)
	if err != nil || stored.State != state.StateKilled {
		t.Fatalf("stored: %s, %v; want killed", stored.State, err)
	}
	left := conflictsOf(t, db, id)
	superseded, _ := getRaw(t, db, id)["superseded_revs"].([]any)
	if len(left) != 1 || !slices.Contains(superseded, any(left[0])) {
		t.Fatalf("after the claim: conflicts %v, superseded %v; want the loser left and set aside", left, superseded)
	}
}
