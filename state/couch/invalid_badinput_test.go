package couch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// wrongField is one field of a transfer document given a value of the
// wrong type (or a value the schema refuses), and the text the quarantine
// reason must contain to name it.
type wrongField struct {
	field string
	value any
	named string
}

// wrongFields covers every field of the document schema.
var wrongFields = []wrongField{
	{"type", 42, `"type"`},
	{"user", 7, "Transfer.user"},
	{"group", []any{}, "Transfer.group"},
	{"role", map[string]any{}, "Transfer.role"},
	{"source", 7, "Transfer.source"},
	{"destination", []any{"T1"}, "Transfer.destination"},
	{"source_lfn", false, "Transfer.source_lfn"},
	{"destination_lfn", map[string]any{}, "Transfer.destination_lfn"},
	{"size", "big", "Transfer.size"},
	{"size", -1, `size "-1": must be >= 0`},
	{"size", 1.5, "Transfer.size"},
	{"size", 1e300, "Transfer.size"},
	{"checksums", "adler32:0a1b2c3d", "Transfer.checksums"},
	{"checksums", map[string]any{"adler32": 12}, "Transfer.checksums"},
	{"priority", "high", "Transfer.priority"},
	{"activity", "fast", "Transfer.activity"},
	{"activity", 64, `activity "64": must be 0..63`},
	{"depends_on", 3, "Transfer.depends_on"},
	{"depends_on", []any{1}, "Transfer.depends_on"},
	{"state", 5, "Transfer.state"},
	{"state", "lost", `state "lost": unknown state`},
	{"owner", 1, "Transfer.owner"},
	{"lease_expires", 12, "Transfer.lease_expires"},
	{"submit_sid", true, "Transfer.submit_sid"},
	{"fts_job", 1, "Transfer.fts_job"},
	{"fts_file_id", "x", "Transfer.fts_file_id"},
	{"source_pfn", 1, "Transfer.source_pfn"},
	{"dest_pfn", []any{}, "Transfer.dest_pfn"},
	{"attempts", "x", "Transfer.attempts"},
	{"attempts", -2, `attempts "-2": must be >= 0`},
	{"retry_after", true, "Transfer.retry_after"},
	{"reason", 1, "Transfer.reason"},
	{"kill_requested", "yes", "Transfer.kill_requested"},
	{"progress", 1, "Transfer.progress"},
	{"progress", map[string]any{"fts_state": "ACTIVE", "updated": 5}, "progress.updated"},
	{"created", 12, "Transfer.created"},
	{"last_update", map[string]any{}, "Transfer.last_update"},
	{"last_update", "yesterday", "Transfer.last_update"},
	{"history", "none", "Transfer.history"},
	{"history", []any{map[string]any{"at": 1, "to": "new"}}, "history.at"},
}

// wrongDoc returns a valid new transfer document of user, number i, with
// the field of w replaced, and its ID.
func wrongDoc(user string, i int, w wrongField) (string, map[string]any) {
	r := state.Request{User: user, Source: "T2_A", Destination: "T1_B",
		SourceLFN: fmt.Sprintf("/store/wrong/%d", i), DestinationLFN: fmt.Sprintf("/store/wrong/%d", i), Size: 1}
	tr := state.NewTransfer(r, newClock().Now(), "test")
	b, _ := json.Marshal(tr)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "_rev")
	m[w.field] = w.value
	return tr.ID, m
}

// TestStore_WrongTypeInEachField: a stored document with a wrong value in
// any one field is never claimed: moved to failed with a reason naming the
// field if it is in a queue, listed in Summary.Invalid with its ID and a
// reason naming the field otherwise, while the valid transfers next to it
// are served. Once Init has installed validate_doc_update, the
// server itself refuses such documents.
func TestStore_WrongTypeInEachField(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	db := rawDB(t, u)
	want := map[string]wrongField{}
	for i, w := range wrongFields {
		id, doc := wrongDoc("alice", i, w)
		if _, err := db.Put(ctx, id, doc); err != nil {
			t.Fatalf("put %s with a wrong %s: %v", id, w.field, err)
		}
		want[id] = w
	}
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	s := open(t, u, newClock(), "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 3))

	got, err := statetest.Claim(ctx, s, 100)
	if err != nil {
		t.Fatalf("NewTransfers with %d invalid documents in the queue: %v", len(want), err)
	}
	if len(got) != 3 {
		t.Errorf("claimed %d transfers, want the 3 valid ones", len(got))
	}
	for _, tr := range got {
		if w, bad := want[tr.ID]; bad {
			t.Errorf("claimed the document with a wrong %s", w.field)
		}
	}
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ByState[state.StateAcquired] != 3 {
		t.Errorf("Summary counts %v, want the 3 valid ones acquired", sum.ByState)
	}
	listed := map[string]string{}
	for _, d := range sum.Invalid {
		listed[d.ID] = d.Reason
	}
	// A document in the queue (a string user, state new) is moved to
	// failed, its reason naming the field, every field kept; the others
	// are listed in Summary.Invalid. A failed one whose wrong field was
	// one aso writes (last_update, history, reason) is valid again.
	for id, w := range want {
		var raw map[string]any
		if err := db.Get(ctx, id).ScanDoc(&raw); err != nil {
			t.Fatal(err)
		}
		_, userOK := raw["user"].(string)
		queued := userOK && w.field != "type" && w.field != "state"
		reason, _ := raw["reason"].(string)
		switch {
		case queued && (raw["state"] != "failed" || !strings.HasPrefix(reason, couch.InvalidReasonPrefix) || !strings.Contains(reason, w.named)):
			t.Errorf("wrong %s (%v): stored as %v with reason %q, want failed, the reason naming it (%q)", w.field, w.value, raw["state"], reason, w.named)
		case queued && w.field != "last_update" && w.field != "history" && w.field != "reason" &&
			fmt.Sprint(raw[w.field]) != fmt.Sprint(w.value):
			t.Errorf("wrong %s: the value %v was not kept, stored %v", w.field, w.value, raw[w.field])
		case !queued && listed[id] == "":
			t.Errorf("wrong %s (%v): document %s is not in Summary.Invalid", w.field, w.value, id)
		case !queued && !strings.Contains(listed[id], w.named):
			t.Errorf("wrong %s (%v): reason %q does not name it (want %q)", w.field, w.value, listed[id], w.named)
		}
	}

	// After Init, the server refuses each of them; a document of another
	// application (a string type) is let in.
	if _, err := db.Put(ctx, "other-app", map[string]any{"type": "other", "user": 7}); err != nil {
		t.Errorf("a document of another type was refused: %v", err)
	}
	var refusedFields []string
	for i, w := range wrongFields {
		id, doc := wrongDoc("bob", i, w)
		_, err := db.Put(ctx, id, doc)
		if kivik.HTTPStatus(err) != http.StatusForbidden || !strings.Contains(err.Error(), w.field) {
			t.Errorf("after Init, a wrong %s (%v) was not refused naming the field: %v", w.field, w.value, err)
			continue
		}
		refusedFields = append(refusedFields, w.field)
	}
	sort.Strings(refusedFields)
	t.Logf("validate_doc_update refused wrong values of: %s", strings.Join(refusedFields, " "))
}
