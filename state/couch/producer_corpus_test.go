package couch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// producerDoc is one document of the producer corpus: a transfer document
// as another tool may write it, and whether aso accepts it.
type producerDoc struct {
	name string
	doc  []byte
	good bool
	// bySchemaToo is false for a bad document whose fault the JSON Schema
	// cannot express (the ID hash, a day that does not exist, ...): only
	// aso's own validation refuses it.
	bySchemaToo bool
	// atClaim marks a bad document the server lets in (its ID is not the
	// hash of its request): the agent moves it to failed when it claims it.
	atClaim bool
}

const (
	corpusUser = "producer"
	corpusTime = "2026-03-01T12:00:00.000000Z"
)

// producerBase is a complete document as a producer writes it: every field
// it can know, none that aso derives, and fields of its own.
func producerBase(lfn string) map[string]any {
	r := state.Request{User: corpusUser, Source: "T2_US_Nebraska", Destination: "T1_US_FNAL",
		SourceLFN: "/store/temp/user/" + lfn, DestinationLFN: "/store/user/" + lfn}
	return map[string]any{
		"_id": r.ID(), "type": "transfer", "user": r.User,
		"source": r.Source, "destination": r.Destination,
		"source_lfn": r.SourceLFN, "destination_lfn": r.DestinationLFN,
		"size": 1048576, "checksums": map[string]any{"adler32": "0a1b2c3d"},
		"state": "new", "created": corpusTime, "last_update": corpusTime,
		"taskname": "260301_120000:producer_crab_test", "job_id": "17", "publish": true,
	}
}

// rehash sets the _id of m to the hash of its request fields.
func rehash(m map[string]any) map[string]any {
	s := func(f string) string { v, _ := m[f].(string); return v }
	m["_id"] = state.TransferID(s("user"), s("source"), s("source_lfn"), s("destination"), s("destination_lfn"))
	return m
}

// producerCorpus returns the corpus: good documents, then bad ones, each
// bad in one way.
func producerCorpus() []producerDoc {
	var out []producerDoc
	n := 0
	add := func(name string, good, bySchema bool, change func(m map[string]any) map[string]any) {
		n++
		m := change(producerBase(fmt.Sprintf("corpus/%03d.root", n)))
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		out = append(out, producerDoc{name: name, doc: b, good: good, bySchemaToo: bySchema})
	}
	atClaim := func(name string, change func(m map[string]any) map[string]any) {
		add(name, false, false, change)
		out[len(out)-1].atClaim = true
	}
	keep := func(m map[string]any) map[string]any { return m }
	set := func(f string, v any) func(m map[string]any) map[string]any {
		return func(m map[string]any) map[string]any { m[f] = v; return m }
	}
	unset := func(f string) func(m map[string]any) map[string]any {
		return func(m map[string]any) map[string]any { delete(m, f); return m }
	}
	setReq := func(f string, v any) func(m map[string]any) map[string]any {
		return func(m map[string]any) map[string]any { m[f] = v; return rehash(m) }
	}
	good := func(name string, change func(m map[string]any) map[string]any) { add(name, true, true, change) }
	bad := func(name string, change func(m map[string]any) map[string]any) { add(name, false, true, change) }
	badGoOnly := func(name string, change func(m map[string]any) map[string]any) { add(name, false, false, change) }

	good("complete", keep)
	good("no checksum", unset("checksums"))
	good("no size", unset("size"))
	good("adler32 upper case", set("checksums", map[string]any{"ADLER32": "0A1B2C3D"}))
	good("priority", set("priority", 5))
	good("lowest priority", set("priority", -2147483648))
	good("highest priority", set("priority", 2147483647))
	good("group and role", func(m map[string]any) map[string]any {
		m["group"], m["role"] = "/cms/escms", "production"
		return m
	})
	good("times with an offset", func(m map[string]any) map[string]any {
		m["created"], m["last_update"] = "2026-03-01T13:00:00+01:00", "2026-03-01T07:00:00.5-05:00"
		return m
	})
	good("time with a comma", set("created", "2026-03-01T12:00:00,25Z"))
	good("leap day", set("created", "2024-02-29T00:00:00Z"))
	good("a dependency", set("depends_on", []any{strings.Repeat("ab", 32)}))
	good("non-ASCII LFN", setReq("source_lfn", "/store/temp/user/données/été.root"))
	good("LFN of 4096 bytes", setReq("source_lfn", "/"+strings.Repeat("é", 2047)+"x"))
	good("LFN outside the BMP", setReq("source_lfn", "/store/temp/\U0001F600.root"))
	good("acquired with a lease", func(m map[string]any) map[string]any {
		m["state"], m["owner"], m["lease_expires"] = "acquired", "host:1:a", corpusTime
		return m
	})
	good("submitted with a job", func(m map[string]any) map[string]any {
		m["state"], m["fts_job"] = "submitted", "b8c6a3f2-0000-11ee-9c1f-02163e01a2b3"
		return m
	})
	good("history and progress", func(m map[string]any) map[string]any {
		m["history"] = []any{map[string]any{"at": corpusTime, "from": "", "to": "new", "by": "crab", "reason": "enqueued"}}
		m["progress"] = map[string]any{"fts_state": "ACTIVE", "bytes": 10, "throughput": 1.5, "updated": corpusTime}
		m["attempts"], m["kill_requested"] = 0, false
		return m
	})
	good("null optional fields", func(m map[string]any) map[string]any {
		m["checksums"], m["depends_on"], m["retry_after"], m["progress"] = nil, nil, nil, nil
		return m
	})

	bad("malformed adler32", set("checksums", map[string]any{"adler32": "XYZ"}))
	bad("adler32 of 7 digits", set("checksums", map[string]any{"adler32": "0a1b2c3"}))
	bad("md5", set("checksums", map[string]any{"md5": "d41d8cd98f00b204e9800998ecf8427e"}))
	badGoOnly("adler32 twice", set("checksums", map[string]any{"adler32": "0a1b2c3d", "Adler32": "0a1b2c3d"}))
	bad("checksum not a string", set("checksums", map[string]any{"adler32": 12}))
	bad("no type", unset("type"))
	bad("type not a string", set("type", 42))
	bad("no user", unset("user"))
	bad("user with a space", setReq("user", "a user"))
	bad("user of 129 bytes", setReq("user", strings.Repeat("u", 129)))
	bad("user that climbs out of a directory", setReq("user", "../victim"))
	bad("user that is an absolute path", setReq("user", "/etc/passwd"))
	bad("user in capitals", setReq("user", "Alice"))
	bad("user with a dot", setReq("user", "alice.smith"))
	bad("user read as a flag", setReq("user", "-rf"))
	bad("site with a space", setReq("source", "T2 US"))
	bad("site not a string", set("destination", 7))
	bad("relative LFN", setReq("source_lfn", "store/x.root"))
	bad("LFN with ..", setReq("destination_lfn", "/store/../x.root"))
	bad("LFN with .", setReq("destination_lfn", "/store/./x.root"))
	bad("LFN with //", setReq("source_lfn", "/store//x.root"))
	bad("LFN with ?", setReq("source_lfn", "/store/x.root?x=1"))
	bad("LFN with %", setReq("source_lfn", "/store/x%20.root"))
	bad("LFN with a control character", setReq("source_lfn", "/store/x\x01.root"))
	bad("LFN with a C1 control character", setReq("source_lfn", "/store/x\u0085.root"))
	badGoOnly("same site and LFN", func(m map[string]any) map[string]any {
		m["destination"], m["destination_lfn"] = m["source"], m["source_lfn"]
		return rehash(m)
	})
	good("same site, another LFN", func(m map[string]any) map[string]any { m["destination"] = m["source"]; return rehash(m) })
	good("another site, the same LFN", func(m map[string]any) map[string]any { m["destination_lfn"] = m["source_lfn"]; return rehash(m) })
	badGoOnly("LFN of 4097 bytes", setReq("source_lfn", "/"+strings.Repeat("é", 2048)))
	atClaim("ID not the hash", set("_id", strings.Repeat("0", 64)))
	atClaim("ID of another request", set("source_lfn", "/store/other.root"))
	bad("ID not hexadecimal", set("_id", "crab-task-17"))
	bad("ID in upper case", func(m map[string]any) map[string]any { m["_id"] = strings.ToUpper(m["_id"].(string)); return m })
	bad("negative size", set("size", -1))
	bad("size a string", set("size", "big"))
	bad("fractional size", set("size", 1.5))
	bad("priority above int32", set("priority", 2147483648))
	bad("fractional priority", set("priority", 0.5))
	bad("dependency not an ID", set("depends_on", []any{"ABC"}))
	badGoOnly("depends on itself", func(m map[string]any) map[string]any { m["depends_on"] = []any{m["_id"]}; return m })
	bad("dependencies not a list", set("depends_on", "x"))
	bad("no state", unset("state"))
	bad("unknown state", set("state", "lost"))
	bad("acquired without owner", func(m map[string]any) map[string]any {
		m["state"], m["lease_expires"] = "acquired", corpusTime
		return m
	})
	bad("submitted without job", set("state", "submitted"))
	bad("no created", unset("created"))
	bad("no last_update", unset("last_update"))
	bad("created empty", set("created", ""))
	bad("created not a time", set("created", "yesterday"))
	bad("created with a lower-case t", set("created", "2026-03-01t12:00:00Z"))
	bad("created without a zone", set("created", "2026-03-01T12:00:00"))
	bad("month 13", set("created", "2026-13-01T12:00:00Z"))
	bad("hour 24", set("last_update", "2026-03-01T24:00:00Z"))
	badGoOnly("February 30", set("created", "2026-02-30T12:00:00Z"))
	badGoOnly("February 29 of a common year", set("created", "2026-02-29T12:00:00Z"))
	badGoOnly("before year 0 in UTC", set("created", "0000-01-01T00:30:00+01:00"))
	bad("negative attempts", set("attempts", -1))
	bad("kill_requested a string", set("kill_requested", "yes"))
	bad("retry_after a number", set("retry_after", 12))
	bad("history not a list", set("history", "none"))
	bad("history entry a number", set("history", []any{1}))
	bad("history time", set("history", []any{map[string]any{"at": "now", "to": "new"}}))
	bad("progress time", set("progress", map[string]any{"fts_state": "ACTIVE", "updated": 5}))
	bad("fts_file_id fractional", set("fts_file_id", 1.5))
	bad("reason a number", set("reason", 1))
	return out
}

// goAccepts reports whether aso's own decoding and validation accept doc.
func goAccepts(doc []byte) error {
	var t state.Transfer
	if err := json.Unmarshal(doc, &t); err != nil {
		return err
	}
	return t.Validate()
}

// httpPut writes doc to the database at dbURL with a plain HTTP PUT, as
// another producer would, and returns the status and body of the answer.
func httpPut(t testing.TB, dbURL, id string, doc []byte) (int, string) {
	t.Helper()
	return do(t, http.MethodPut, strings.TrimSuffix(dbURL, "/")+"/"+id, doc)
}

// TestValidate_AgreesWithGo runs the producer corpus through aso's Go
// validation and through the server's validate_doc_update (a plain PUT,
// as a producer writes): both accept the good documents and refuse the
// bad ones, but for an ID that is not the hash of the request, which the
// server lets in and the agent moves to failed at once when it claims,
// its reason naming _id.
func TestValidate_AgreesWithGo(t *testing.T) {
	u := newDB(t)
	var atClaim []string
	for _, c := range producerCorpus() {
		goErr := goAccepts(c.doc)
		if (goErr == nil) != c.good {
			t.Errorf("%s: Go validation says %v, want good=%v", c.name, goErr, c.good)
		}
		var id struct {
			ID string `json:"_id"`
		}
		_ = json.Unmarshal(c.doc, &id)
		code, body := httpPut(t, u, id.ID, c.doc)
		switch {
		case (c.good || c.atClaim) && code != http.StatusCreated:
			t.Errorf("%s: the server refused the document: HTTP %d %s", c.name, code, body)
		case !c.good && !c.atClaim && code != http.StatusForbidden:
			t.Errorf("%s: the server answered HTTP %d, want 403 (Go: %v)", c.name, code, goErr)
		case c.atClaim:
			atClaim = append(atClaim, id.ID)
		}
	}

	s := open(t, u, newClock(), corpusUser, "host:1:a", couch.Options{})
	got, err := statetest.Claim(context.Background(), s, 1000)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, u)
	for _, id := range atClaim {
		raw := getRaw(t, db, id)
		reason, _ := raw["reason"].(string)
		if raw["state"] != "failed" || !strings.HasPrefix(reason, couch.InvalidReasonPrefix+"_id ") {
			t.Errorf("%s: after a claim: state %v, reason %q; want failed, the reason naming _id", id, raw["state"], reason)
		}
	}
	for _, tr := range got {
		if slices.Contains(atClaim, tr.ID) {
			t.Errorf("claimed %s, whose ID is not its hash", tr.ID)
		}
	}
}

// TestValidate_Updates: an update of a stored transfer is checked for what
// it changes, though the function skips what an update carries over: each
// bad change is refused, a good one accepted.
func TestValidate_Updates(t *testing.T) {
	u := newDB(t)
	s := open(t, u, newClock(), "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 1))
	got := claim(t, s, 1)
	db := rawDB(t, u)
	id := got[0].ID
	entry := func(at string) []any {
		h, _ := getRaw(t, db, id)["history"].([]any)
		return append(h, map[string]any{"at": at, "from": "acquired", "to": "acquired", "by": "host:1:a"})
	}
	tests := []struct {
		name   string
		change func(m map[string]any)
		ok     bool
	}{
		{"lease renewed", func(m map[string]any) { m["lease_expires"] = "2026-03-01T12:30:00.000000Z" }, true},
		{"history entry added", func(m map[string]any) { m["history"] = entry("2026-03-01T12:01:00Z") }, true},
		{"lease not a time", func(m map[string]any) { m["lease_expires"] = "soon" }, false},
		{"history entry with a bad time", func(m map[string]any) { m["history"] = entry("now") }, false},
		{"negative attempts", func(m map[string]any) { m["attempts"] = -1 }, false},
		{"user changed", func(m map[string]any) { m["user"] = "bob" }, false},
		{"source_lfn changed", func(m map[string]any) { m["source_lfn"] = "/store/other.root" }, false},
		{"bad checksum", func(m map[string]any) { m["checksums"] = map[string]any{"adler32": "XYZ"} }, false},
		{"fractional priority", func(m map[string]any) { m["priority"] = 1.5 }, false},
		{"bad dependency", func(m map[string]any) { m["depends_on"] = []any{"x"} }, false},
		{"progress time", func(m map[string]any) { m["progress"] = map[string]any{"updated": "later"} }, false},
		{"acquired without owner", func(m map[string]any) { delete(m, "owner") }, false},
		{"created removed", func(m map[string]any) { delete(m, "created") }, false},
		{"done", func(m map[string]any) { m["state"] = "done" }, true},
		{"done revived without aso retry", func(m map[string]any) { m["state"] = "new" }, false},
	}
	for _, tc := range tests {
		m := getRaw(t, db, id)
		tc.change(m)
		b, _ := json.Marshal(m)
		code, body := httpPut(t, u, id, b)
		switch {
		case tc.ok && code != http.StatusCreated:
			t.Errorf("%s: HTTP %d %s, want 201", tc.name, code, body)
		case !tc.ok && code != http.StatusForbidden:
			t.Errorf("%s: HTTP %d %s, want 403", tc.name, code, body)
		}
	}
}

// storedBeforeInit writes the producer's document m into the database at
// u before Init installs the validation, as a producer did before aso
// refused its fault, then runs Init and opens a store of the corpus user.
func storedBeforeInit(t testing.TB, u string, m map[string]any) (string, *couch.Store) {
	t.Helper()
	b, _ := json.Marshal(m)
	id := m["_id"].(string)
	if code, body := httpPut(t, u, id, b); code != http.StatusCreated {
		t.Fatalf("PUT: HTTP %d %s", code, body)
	}
	if err := couch.Init(context.Background(), couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	return id, open(t, u, newClock(), corpusUser, "host:1:a", couch.Options{})
}

// TestClaim_QuarantineKeepsEmptyFields: a document written before the
// validation was installed, with empty optional fields aso does not write
// back ("group": "", "role": null) and a wrong size, is moved to failed by
// the claim all the same, its fields kept.
func TestClaim_QuarantineKeepsEmptyFields(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	m := producerBase("quarantine/empty.root")
	m["group"], m["role"], m["size"] = "", nil, "big"
	id, s := storedBeforeInit(t, u, m)
	if got, err := statetest.Claim(ctx, s, 10); err != nil || len(got) != 0 {
		t.Fatalf("NewTransfers = %d, %v; want none claimed", len(got), err)
	}
	raw := getRaw(t, rawDB(t, u), id)
	reason, _ := raw["reason"].(string)
	if raw["state"] != "failed" || !strings.Contains(reason, "Transfer.size") || raw["size"] != "big" || raw["taskname"] != m["taskname"] {
		t.Fatalf("stored after the claim: %v", raw)
	}
}

// TestClaim_SameSiteAndLFNFails: a queued transfer another producer wrote
// before the validation was installed, whose destination is its source
// (the same site and LFN), is not claimed: the claim's own write moves it
// to failed, its reason naming the field and the fault, its fields kept.
// Once Init has installed the validation, the server refuses such a write.
func TestClaim_SameSiteAndLFNFails(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	m := producerBase("self/copy.root")
	m["destination"], m["destination_lfn"] = m["source"], m["source_lfn"]
	id, s := storedBeforeInit(t, u, rehash(m))
	enqueue(t, s, requests(corpusUser, 2))
	got, err := statetest.Claim(ctx, s, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("NewTransfers = %d, %v; want the 2 valid transfers", len(got), err)
	}
	for _, tr := range got {
		if tr.ID == id {
			t.Fatalf("claimed %s, whose destination is its source", id)
		}
	}
	raw := getRaw(t, rawDB(t, u), id)
	reason, _ := raw["reason"].(string)
	if raw["state"] != "failed" || !strings.HasPrefix(reason, couch.InvalidReasonPrefix+"destination_lfn ") ||
		!strings.Contains(reason, "same file as the source") || raw["taskname"] != m["taskname"] {
		t.Fatalf("stored after the claim: state %v, reason %q; want failed, naming destination_lfn and the fault", raw["state"], reason)
	}
	m["source_lfn"], m["destination_lfn"] = "/store/temp/user/self/other.root", "/store/temp/user/self/other.root"
	rehash(m)
	b, _ := json.Marshal(m)
	if code, body := httpPut(t, u, m["_id"].(string), b); code != http.StatusForbidden || !strings.Contains(body, "same file as the source") {
		t.Fatalf("a producer's write of another such document after Init: HTTP %d %s, want 403 naming the fault", code, body)
	}
}

// TestValidate_UserRuleIsGos: the server's refusal of a user name says the
// rule in state.UserRule's words.
func TestValidate_UserRuleIsGos(t *testing.T) {
	js, err := os.ReadFile("validate.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "var userRule = '"+state.UserRule+"';") {
		t.Errorf("validate.js does not say the user rule as state.UserRule does: %q", state.UserRule)
	}
}
