package couch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// viewKeys returns the keys of the rows of view of aso-views from start
// to end, read as the admin (not reduced).
func viewKeys(t *testing.T, u, view string, start, end []any) [][]any {
	t.Helper()
	s, _ := json.Marshal(start)
	e, _ := json.Marshal(end)
	q := url.Values{"startkey": {string(s)}, "endkey": {string(e)}}
	if view == "user" {
		q.Set("reduce", "false")
	}
	code, body := do(t, http.MethodGet, u+"/_design/aso-views/_view/"+view+"?"+q.Encode(), nil)
	if code != http.StatusOK {
		t.Fatalf("view %s: HTTP %d %s", view, code, body)
	}
	var res struct {
		Rows []struct {
			Key []any `json:"key"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for _, r := range res.Rows {
		out = append(out, r.Key)
	}
	return out
}

// TestViews_PerUser: the user view holds one row per transfer of a user,
// keyed by user and state, and no other user's; the conflicts view the
// user's documents with conflicting revisions only.
func TestViews_PerUser(t *testing.T) {
	ctx := context.Background()
	u := newDB(t)
	s := open(t, u, newClock(), "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 3))
	enqueue(t, s, requests("bob", 2))
	claim(t, s, 1)
	rows := viewKeys(t, u, "user", []any{"alice"}, []any{"alice", map[string]any{}})
	var states []string
	for _, k := range rows {
		states = append(states, k[1].(string))
	}
	slices.Sort(states)
	if want := []string{"acquired", "new", "new"}; !slices.Equal(states, want) {
		t.Fatalf("user view rows of alice: %v, want states %v", rows, want)
	}
	if got := viewKeys(t, u, "conflicts", []any{"alice"}, []any{"alice", map[string]any{}}); len(got) != 0 {
		t.Fatalf("conflicts of alice before any: %v", got)
	}
	id := requests("alice", 3)[2].ID()
	secondLeaf(t, u, id)
	got := viewKeys(t, u, "conflicts", []any{"alice"}, []any{"alice", map[string]any{}})
	if len(got) != 1 || got[0][1] != id {
		t.Fatalf("conflicts of alice: %v, want [alice %s]", got, id)
	}
	if got := viewKeys(t, u, "conflicts", []any{"bob"}, []any{"bob", map[string]any{}}); len(got) != 0 {
		t.Fatalf("conflicts of bob: %v", got)
	}

	// aso resolve-conflicts --user alice ends alice's, and leaves bob's
	bobs := requests("bob", 2)[0].ID()
	secondLeaf(t, u, bobs)
	op := open(t, couchtest.AsRole(t, u, couch.RoleOperator), newClock(), "", "operator@host:cli", couch.Options{})
	if rep, err := op.ResolveConflicts(ctx, "alice"); err != nil || rep.Resolved+rep.Deleted == 0 {
		t.Fatalf("resolve the conflicts of alice: %+v, %v", rep, err)
	}
	if got := viewKeys(t, u, "conflicts", []any{}, []any{map[string]any{}}); len(got) != 1 || got[0][1] != bobs {
		t.Fatalf("conflicts after those of alice were resolved: %v, want bob's only", got)
	}
}

// secondLeaf writes a second leaf revision of the document id, as a
// cluster's replica that took another write would leave it.
func secondLeaf(t *testing.T, u, id string) {
	t.Helper()
	var doc map[string]any
	if err := rawDB(t, u).Get(context.Background(), id).ScanDoc(&doc); err != nil {
		t.Fatal(err)
	}
	doc["_rev"], doc["_revisions"] = "1-ffffffffffffffffffffffffffffffff", map[string]any{"start": 1, "ids": []string{"ffffffffffffffffffffffffffffffff"}}
	b, _ := json.Marshal(map[string]any{"docs": []any{doc}, "new_edits": false})
	if code, body := do(t, http.MethodPost, u+"/_bulk_docs", b); code != http.StatusCreated {
		t.Fatalf("write a conflicting leaf: HTTP %d %s", code, body)
	}
}

// TestSummary_AllUsersProgress: a summary of every user, which reads every
// document, says how many it has read after each page.
func TestSummary_AllUsersProgress(t *testing.T) {
	u := newDB(t)
	s := open(t, u, newClock(), "", "", couch.Options{})
	enqueue(t, s, requests("alice", 4500))
	var seen []int
	sum, err := s.Summary(context.Background(), state.SummaryOptions{Progress: func(n int) { seen = append(seen, n) }})
	if err != nil || sum.Total != 4500 {
		t.Fatalf("summary: %d transfers, %v", sum.Total, err)
	}
	if len(seen) < 2 || seen[len(seen)-1] < 4000 || !slices.IsSorted(seen) {
		t.Fatalf("progress of a summary of 4,500 transfers: %v, want a count after each page", seen)
	}
	seen = nil
	if _, err := s.Summary(context.Background(), state.SummaryOptions{User: "alice", Progress: func(n int) { seen = append(seen, n) }}); err != nil || len(seen) != 0 {
		t.Fatalf("a summary of one user reported reading the store: %v, %v", seen, err)
	}
}
