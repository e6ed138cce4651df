package couch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// findStats runs query with execution_stats against the database at u.
func findStats(t *testing.T, u string, query map[string]any) (docs int, examined int) {
	t.Helper()
	query["execution_stats"] = true
	b, _ := json.Marshal(query)
	pu, err := url.Parse(u + "/_find")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, pu.String(), bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if pu.User != nil {
		p, _ := pu.User.Password()
		req.SetBasicAuth(pu.User.Username(), p)
		pu.User = nil
		req.URL = pu
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Docs  []json.RawMessage `json:"docs"`
		Stats struct {
			TotalDocsExamined int `json:"total_docs_examined"`
		} `json:"execution_stats"`
		Warning string `json:"warning"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("_find: HTTP %d, %v", resp.StatusCode, err)
	}
	if out.Warning != "" {
		t.Errorf("_find warning: %s", out.Warning)
	}
	return len(out.Docs), out.Stats.TotalDocsExamined
}

// TestClaimQuery_ExaminesOnlyCandidates checks on a real CouchDB that the
// claim query reads index entries of the agent's user only: with many
// finished transfers of other users and of the same user in the database,
// the documents examined stay close to the documents returned.
func TestClaimQuery_ExaminesOnlyCandidates(t *testing.T) {
	if !couchtest.Real() {
		t.Skip("the PouchDB test server ignores execution_stats; set " + couchtest.EnvURL + " to an Apache CouchDB 3.x server to run this test")
	}
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	bob := open(t, u, c, "bob", "host:2:b", couch.Options{})
	enqueue(t, bob, requests("bob", 300))
	alice := open(t, u, c, "alice", "host:1:a", couch.Options{})
	enqueue(t, alice, requests("alice", 220))
	got, err := alice.NewTransfers(ctx, 200)
	if err != nil || len(got) != 200 {
		t.Fatalf("NewTransfers = %d, %v", len(got), err)
	}
	docs, examined := findStats(t, u, couch.ClaimQuery("alice", state.At(c.Now()).String(), 50, 0))
	if docs != 20 {
		t.Fatalf("claim query returned %d, want the 20 unclaimed", docs)
	}
	// The 200 acquired transfers with live leases are still in the index
	// and are filtered; bob's 300 must not be read.
	if examined > 220 {
		t.Fatalf("claim query examined %d documents for %d results: not using the (user, claim_key) index", examined, docs)
	}
}
