package cmd_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestRun_ProducerDocuments: another producer writes transfer documents
// straight into the database with a plain HTTP PUT, as an aso-producer
// user (every field it can know, none that aso derives, fields of its
// own); `aso run`, as an aso-agent user, claims, submits and completes them,
// and the producer's fields are intact.
func TestRun_ProducerDocuments(t *testing.T) {
	const n = 8
	sites, requests, dst := localSites(t, n)
	u := couchtest.DB(t)
	aso(t, "init", "--state", u, "--log-level", "error").wantCode(t, 0)

	f, err := os.Open(requests)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		var r state.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		doc := map[string]any{
			"type": "transfer", "user": r.User, "source": r.Source, "destination": r.Destination,
			"source_lfn": r.SourceLFN, "destination_lfn": r.DestinationLFN,
			"size": r.Size, "checksums": r.Checksums, "state": "new",
			"created": "2026-03-01T12:00:00Z", "last_update": "2026-03-01T12:00:00Z",
			"taskname": "260301_120000:bob_crab_producer", "job_id": i + 1, "publish": i%2 == 0,
			"publish_dbs_url": "https://cmsweb.cern.ch/dbs/prod/phys03/DBSWriter",
		}
		b, _ := json.Marshal(doc)
		id := r.ID()
		req, _ := http.NewRequest(http.MethodPut, couchtest.AsRole(t, u, couch.RoleProducer)+"/"+id, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s: HTTP %d %s", id, resp.StatusCode, body)
		}
		ids = append(ids, id)
	}
	if len(ids) != n {
		t.Fatalf("wrote %d documents, want %d", len(ids), n)
	}

	invocation{env: roleCredentials(t, couch.RoleAgent)}.run(t, "run", "--state", couchtest.WithoutAuth(u), "--user", "bob", "--sites", sites,
		"--fts", "local", "--interval", "20ms", "--progress", "never", "--log-level", "warn").wantCode(t, 0)
	wantQueue(t, map[state.State]int{state.StateDone: 8, state.StateFailed: 0}, "--state", u, "--user", "bob")
	if entries, err := os.ReadDir(dst); err != nil || len(entries) != n {
		t.Errorf("%d destination files (%v), want %d", len(entries), err, n)
	}
	for i, id := range ids {
		resp, err := http.Get(u + "/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if doc["state"] != "done" {
			t.Errorf("%s: state %v, want done", id, doc["state"])
		}
		if doc["taskname"] != "260301_120000:bob_crab_producer" || doc["job_id"] != float64(i+1) ||
			doc["publish"] != (i%2 == 0) || !strings.HasPrefix(doc["publish_dbs_url"].(string), "https://") {
			t.Errorf("%s: the producer's fields changed: %v", id, doc)
		}
		if h, _ := doc["history"].([]any); len(h) < 3 {
			t.Errorf("%s: history %v, want the claim, submission and completion", id, doc["history"])
		}
	}
}
