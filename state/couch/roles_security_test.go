package couch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/statetest"
)

// The attack suite: every role of aso's database tries each write it must
// not make, alone and inside _bulk_docs, and each is refused with the
// status CouchDB gives it while nothing in the database changes; the same
// writes by the roles that may make them succeed.

// Writers of the suite besides aso's roles: a physicist ("alice", role
// aso-user, the owner of most fixture transfers), a user of the server who
// is not a member of the database, and an anonymous client.
const (
	writerAlice     = "alice"
	writerNonMember = "non-member"
	writerAnonymous = "anonymous"
)

var suiteWriters = []string{couch.RoleProducer, writerAlice, couch.RoleAgent, couch.RoleOperator, couch.RoleReader, writerNonMember, writerAnonymous}

// writerURL returns the database URL u with the credentials of writer.
func writerURL(t *testing.T, u, writer string) string {
	t.Helper()
	switch writer {
	case writerAlice:
		return couchtest.As(u, "alice", couchtest.NewUser(t, "alice", couch.RoleUser))
	case writerNonMember:
		return couchtest.As(u, "test-stranger", couchtest.NewUser(t, "test-stranger", "another-application"))
	case writerAnonymous:
		return couchtest.WithoutAuth(u)
	}
	return couchtest.AsRole(t, u, writer)
}

// roleFixture is a database prepared by Init holding transfers in several
// states and run locks, written by the admin (u).
type roleFixture struct {
	u    string
	now  time.Time
	docs map[string]map[string]any // by name: aliceNew, aliceSub, aliceKill, aliceDone, aliceReplaced, bobNew, lockAlice, lockCarol
}

func newRoleFixture(t *testing.T) *roleFixture {
	t.Helper()
	f := &roleFixture{u: newDB(t), now: time.Now().UTC(), docs: map[string]map[string]any{}}
	req := func(user string, n int) state.Request { return requests(user, n+1)[n] }
	put := func(name string, tr state.Transfer) {
		b, _ := json.Marshal(tr)
		f.write(t, name, b)
	}
	newT := func(user string, n int) state.Transfer { return state.NewTransfer(req(user, n), f.now, "producer") }
	put("aliceNew", newT("alice", 0))
	sub := newT("alice", 1)
	_ = state.Claim(&sub, state.Agent{User: "alice", Owner: "host:1:agent"}, f.now, time.Hour)
	sub.SubmitSID, sub.FTSJob = "sid-1", "job-1"
	sub.Transition(state.StateSubmitted, f.now, "host:1:agent", "")
	put("aliceSub", sub)
	other := func(n int) state.Transfer {
		r := req("alice", n)
		c := sub
		c.History = slices.Clone(sub.History)
		c.ID, c.SourceLFN, c.DestinationLFN = r.ID(), r.SourceLFN, r.DestinationLFN
		return c
	}
	kill := other(2)
	kill.KillRequested = true
	put("aliceKill", kill)
	done := other(3)
	done.Transition(state.StateDone, f.now, "host:1:agent", "")
	put("aliceDone", done)
	replaced := other(4)
	replaced.Transition(state.StateDone, f.now, "host:1:agent", "")
	bob := req("bob", 1)
	_, _ = state.SupersedeOf(&replaced, &state.Transfer{ID: bob.ID(), User: "bob"}, f.now, "producer")
	put("aliceReplaced", replaced)
	put("bobNew", newT("bob", 0))
	live, _ := json.Marshal(state.LockDoc{ID: state.LockID("alice"), Type: state.LockDocType, User: "alice", Holder: "host:9:other", Expire: state.At(f.now.Add(time.Hour))})
	f.write(t, "lockAlice", live)
	gone, _ := json.Marshal(state.LockDoc{ID: state.LockID("carol"), Type: state.LockDocType, User: "carol", Holder: "host:8:gone", Expire: state.At(f.now.Add(-time.Hour))})
	f.write(t, "lockCarol", gone)
	return f
}

// write stores doc as the admin and keeps it (with its revision) as name.
func (f *roleFixture) write(t *testing.T, name string, doc []byte) {
	t.Helper()
	var m map[string]any
	_ = json.Unmarshal(doc, &m)
	delete(m, "_rev")
	b, _ := json.Marshal(m)
	code, body := httpPut(t, f.u, url.PathEscape(m["_id"].(string)), b)
	if code != http.StatusCreated {
		t.Fatalf("fixture %s: HTTP %d %s", name, code, body)
	}
	var r struct {
		Rev string `json:"rev"`
	}
	_ = json.Unmarshal([]byte(body), &r)
	m["_rev"] = r.Rev
	f.docs[name] = m
}

// doc returns a copy of the fixture document name, to change.
func (f *roleFixture) doc(name string) map[string]any {
	b, _ := json.Marshal(f.docs[name])
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// snapshot is every document of the database, with its conflicts, as the
// admin reads it.
func (f *roleFixture) snapshot(t *testing.T) string {
	t.Helper()
	code, body := do(t, http.MethodGet, f.u+"/_all_docs?include_docs=true&conflicts=true", nil)
	if code != http.StatusOK {
		t.Fatalf("snapshot: HTTP %d %s", code, body)
	}
	return body
}

// do makes one request with the credentials in u's user information.
func do(t testing.TB, method, u string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// attack is one write: the document it writes (with _deleted for a
// deletion), who may make it, and the rule that refuses the others.
type attack struct {
	name    string
	doc     func(f *roleFixture) map[string]any
	allowed []string
	// rule is the validate_doc_update rule of a refusal ("": CouchDB's
	// own, for a design document); byRole overrides it for some writers.
	rule   string
	byRole map[string]string
	// conflict: the write's revision is not the document's leaf, so
	// CouchDB refuses it 409 before validate_doc_update runs, whoever
	// makes it.
	conflict bool
}

func changed(name string, change func(m map[string]any)) func(f *roleFixture) map[string]any {
	return func(f *roleFixture) map[string]any {
		m := f.doc(name)
		change(m)
		return m
	}
}

func created(user string, n int, change func(m map[string]any)) func(f *roleFixture) map[string]any {
	return func(f *roleFixture) map[string]any {
		tr := state.NewTransfer(requests(user, n+1)[n], f.now, "producer")
		b, _ := json.Marshal(tr)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if change != nil {
			change(m)
		}
		return m
	}
}

// supersede records on the ended transfer m that transfer by replaces it,
// as an enqueue does (state.SupersedeOf), then applies change.
func supersede(by string, change func(m map[string]any)) func(m map[string]any) {
	return func(m map[string]any) {
		m["superseded_by"] = by
		h, _ := m["history"].([]any)
		m["history"] = append(h, map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "from": m["state"], "to": m["state"],
			"by": "producer", "reason": state.ReplacedByPrefix + by + " (user bob), which copies another file to the destination"})
		if change != nil {
			change(m)
		}
	}
}

// entry appends a history entry to m.
func entry(m map[string]any, from, to, reason string) {
	h, _ := m["history"].([]any)
	m["history"] = append(h, map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "from": from, "to": to, "by": "attacker", "reason": reason})
	m["last_update"] = time.Now().UTC().Format(time.RFC3339Nano)
}

var (
	roleAgent    = []string{couch.RoleAgent}
	roleOperator = []string{couch.RoleOperator}
	notRoles     = map[string]string{couch.RoleReader: "roles"}
)

func attacks() []attack {
	agentOrOperator := []string{couch.RoleAgent, couch.RoleOperator}
	lockRules := map[string]string{couch.RoleProducer: "locks", writerAlice: "locks", couch.RoleReader: "locks"}
	deleteRules := map[string]string{}
	creators := map[string]string{couch.RoleAgent: "create", couch.RoleOperator: "create", couch.RoleReader: "roles"}
	endedRules := map[string]string{couch.RoleAgent: "ended", couch.RoleReader: "roles"}
	replacer := strings.Repeat("b", 64)
	return []attack{
		{name: "mark done", allowed: roleAgent, rule: "agent-fields", byRole: notRoles,
			doc: changed("aliceSub", func(m map[string]any) { entry(m, "submitted", "done", ""); m["state"] = "done" })},
		{name: "move a transfer to another user", rule: "identity", byRole: notRoles,
			doc: changed("aliceNew", func(m map[string]any) { m["user"] = "bob" })},
		{name: "change an LFN", rule: "identity", byRole: notRoles,
			doc: changed("aliceNew", func(m map[string]any) { m["source_lfn"] = "/store/elsewhere.root" })},
		{name: "change a checksum", rule: "identity", byRole: notRoles,
			doc: changed("aliceSub", func(m map[string]any) { m["checksums"] = map[string]any{"adler32": "ffffffff"} })},
		{name: "take another holder's lock", allowed: roleOperator, rule: "lock-takeover", byRole: lockRules,
			doc: changed("lockAlice", func(m map[string]any) { m["holder"] = "host:6:thief" })},
		// the server cannot tell one agent's renewal from another's: agents
		// share a role, and the revision check and each agent's write
		// fence keep them apart (design, section 5)
		{name: "extend another holder's lock", allowed: agentOrOperator, rule: "locks", byRole: lockRules,
			doc: changed("lockAlice", func(m map[string]any) { m["expire"] = time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339) })},
		{name: "release another holder's lock", allowed: agentOrOperator, rule: "locks", byRole: lockRules,
			doc: changed("lockAlice", func(m map[string]any) { delete(m, "expire") })},
		{name: "delete another holder's lock", allowed: roleOperator, rule: "delete", byRole: deleteRules,
			doc: changed("lockAlice", func(m map[string]any) { m["_deleted"] = true })},
		{name: "take an expired lock", allowed: agentOrOperator, rule: "locks", byRole: lockRules,
			doc: changed("lockCarol", func(m map[string]any) {
				m["holder"], m["expire"] = "host:5:next", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			})},
		{name: "delete a transfer", allowed: roleOperator, rule: "delete",
			doc: changed("aliceDone", func(m map[string]any) { m["_deleted"] = true })},
		{name: "write a design document", rule: "",
			doc: func(*roleFixture) map[string]any {
				return map[string]any{"_id": "_design/aso-other", "validate_doc_update": "function () {}"}
			}},
		{name: "replace the validation without its revision", conflict: true,
			doc: func(*roleFixture) map[string]any {
				return map[string]any{"_id": couch.DesignID, "validate_doc_update": "function () {}"}
			}},
		{name: "mark done from a stale revision", conflict: true,
			doc: changed("aliceSub", func(m map[string]any) {
				m["_rev"] = "1-00000000000000000000000000000000"
				entry(m, "submitted", "done", "")
				m["state"] = "done"
			})},
		{name: "create a transfer for another user", allowed: []string{couch.RoleProducer}, rule: "create",
			byRole: map[string]string{writerAlice: "own-transfers", couch.RoleAgent: "create", couch.RoleReader: "roles"},
			doc:    created("bob", 5, nil)},
		{name: "create a transfer of one's own", allowed: []string{couch.RoleProducer, writerAlice}, rule: "create", byRole: creators,
			doc: created("alice", 5, nil)},
		{name: "create a transfer already done", rule: "create", byRole: creators,
			doc: created("alice", 6, func(m map[string]any) { m["state"] = "done" })},
		{name: "create a transfer with an agent's field", rule: "agent-fields", byRole: creators,
			doc: created("alice", 7, func(m map[string]any) { m["fts_job"] = "job-9" })},
		{name: "create a transfer whose source is its destination", rule: "same-file", byRole: map[string]string{couch.RoleReader: "roles"},
			doc: created("alice", 8, func(m map[string]any) {
				m["destination"], m["destination_lfn"] = m["source"], m["source_lfn"]
				r := state.Request{User: "alice", Source: m["source"].(string), Destination: m["source"].(string),
					SourceLFN: m["source_lfn"].(string), DestinationLFN: m["source_lfn"].(string)}
				m["_id"] = r.ID()
			})},
		{name: "kill another user's transfer", allowed: []string{couch.RoleProducer, couch.RoleAgent, couch.RoleOperator},
			rule: "own-transfers", byRole: notRoles,
			doc: changed("bobNew", func(m map[string]any) {
				entry(m, "new", "killed", "killed by request")
				m["state"], m["kill_requested"], m["reason"] = "killed", true, "killed by request"
			})},
		{name: "kill one's own transfer", allowed: []string{couch.RoleProducer, writerAlice, couch.RoleAgent, couch.RoleOperator},
			rule: "agent-fields", byRole: notRoles,
			doc: changed("aliceSub", func(m map[string]any) { m["kill_requested"] = true })},
		{name: "retry", allowed: []string{writerAlice, couch.RoleOperator}, rule: "agent-fields",
			byRole: map[string]string{couch.RoleAgent: "retry", couch.RoleReader: "roles"},
			doc: changed("aliceDone", func(m map[string]any) {
				entry(m, "done", "new", "retry requested")
				m["state"] = "new"
				for _, k := range []string{"owner", "lease_expires", "submit_sid", "fts_job"} {
					delete(m, k)
				}
			})},
		{name: "record a verification", allowed: agentOrOperator, rule: "verify", byRole: notRoles,
			doc: changed("aliceDone", func(m map[string]any) {
				h, _ := m["history"].([]any)
				m["history"] = append(h, map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "from": "done", "to": "done",
					"by": "attacker", "reason": "verified: present", "verified": "present"})
			})},
		// an enqueue's record on the owner it replaces: once, nothing else
		{name: "record a replacement", allowed: []string{couch.RoleProducer, writerAlice, couch.RoleAgent}, rule: "agent-fields",
			byRole: notRoles, doc: changed("aliceDone", supersede(replacer, nil))},
		{name: "record a replacement that names no transfer", rule: "agent-fields", byRole: endedRules,
			doc: changed("aliceDone", supersede("everything", nil))},
		{name: "record a replacement and change the reason", rule: "agent-fields", byRole: endedRules,
			doc: changed("aliceDone", supersede(replacer, func(m map[string]any) { m["reason"] = "lost" }))},
		{name: "record a replacement and erase the history", rule: "agent-fields", byRole: endedRules,
			doc: changed("aliceDone", supersede(replacer, func(m map[string]any) { h := m["history"].([]any); m["history"] = h[len(h)-1:] }))},
		{name: "record a replacement on an unfinished transfer", allowed: roleAgent, rule: "agent-fields", byRole: notRoles,
			doc: changed("aliceSub", supersede(replacer, nil))},
		{name: "record a second replacement", rule: "agent-fields", byRole: endedRules,
			doc: changed("aliceReplaced", supersede(strings.Repeat("e", 64), nil))},
		{name: "revive without a retry", rule: "agent-fields", byRole: map[string]string{couch.RoleAgent: "retry", couch.RoleReader: "roles"},
			doc: changed("aliceDone", func(m map[string]any) { entry(m, "done", "new", ""); m["state"] = "new" })},
		{name: "withdraw a kill request", rule: "agent-fields", byRole: map[string]string{couch.RoleAgent: "kill", couch.RoleReader: "roles"},
			doc: changed("aliceKill", func(m map[string]any) { m["kill_requested"] = false })},
		{name: "write another application's document", rule: "other-documents",
			doc: func(*roleFixture) map[string]any { return map[string]any{"_id": "note-1", "type": "note"} }},
	}
}

// expect is the answer a writer's write of a must get: the status, and
// the text its reason must hold ("" when allowed).
func (a attack) expect(writer string) (int, []string) {
	switch {
	case writer == writerAnonymous:
		return http.StatusUnauthorized, []string{"You are not authorized to access this db."}
	case writer == writerNonMember:
		return http.StatusForbidden, []string{"You are not allowed to access this db."}
	case slices.Contains(a.allowed, writer):
		return http.StatusCreated, nil
	case a.conflict:
		return http.StatusConflict, []string{"conflict"}
	case a.rule == "" && a.byRole[writer] == "":
		return http.StatusForbidden, []string{"You are not a db or server admin."}
	}
	rule := a.rule
	if r, ok := a.byRole[writer]; ok {
		rule = r
	}
	role := writer
	if writer == writerAlice {
		role = couch.RoleUser
	}
	return http.StatusForbidden, []string{`rule "` + rule + `"`, role}
}

// TestRoles_Attacks tries every attack as every writer, alone and inside
// _bulk_docs, each refusal on the same database (which must not change),
// each allowed write on a fresh one. CouchDB checks a write's revision
// before it runs validate_doc_update (couch_db:prep_and_validate_update):
// a write whose revision is not the document's leaf, or that creates a
// document that exists, is 409 whoever makes it, and only a write of the
// leaf reaches the rules and is 403 naming the rule and the role. The
// attacks say which they are (conflict), and the test server and a real
// CouchDB 3.5 answer each with the same status.
func TestRoles_Attacks(t *testing.T) {
	for _, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			f := newRoleFixture(t)
			before := f.snapshot(t)
			for _, w := range suiteWriters {
				code, _ := a.expect(w)
				if code == http.StatusCreated {
					for _, bulk := range []bool{false, true} {
						g := newRoleFixture(t)
						was := g.snapshot(t)
						tryWrite(t, g, a, w, bulk)
						if g.snapshot(t) == was {
							t.Errorf("%s (bulk %v): allowed, but nothing changed", w, bulk)
						}
					}
					continue
				}
				for _, bulk := range []bool{false, true} {
					tryWrite(t, f, a, w, bulk)
					if after := f.snapshot(t); after != before {
						t.Fatalf("%s (bulk %v): refused, but the database changed:\nbefore %s\nafter  %s", w, bulk, before, after)
					}
				}
			}
		})
	}
}

// tryWrite makes a's write as w, alone or in a _bulk_docs, and checks the
// answer.
func tryWrite(t *testing.T, f *roleFixture, a attack, w string, bulk bool) {
	t.Helper()
	doc := a.doc(f)
	u := writerURL(t, f.u, w)
	wantCode, wantText := a.expect(w)
	id := doc["_id"].(string)
	var code int
	var reason string
	switch {
	case bulk:
		b, _ := json.Marshal(map[string]any{"docs": []any{doc}})
		var body string
		code, body = do(t, http.MethodPost, u+"/_bulk_docs", b)
		var res []struct {
			ID, Error, Reason string
		}
		if code == http.StatusCreated && json.Unmarshal([]byte(body), &res) == nil && len(res) == 1 && res[0].Error != "" {
			// a refusal inside _bulk_docs is the document's own
			code, reason = map[string]int{"forbidden": http.StatusForbidden, "unauthorized": http.StatusUnauthorized, "conflict": http.StatusConflict}[res[0].Error], res[0].Error+": "+res[0].Reason
		} else {
			reason = body
		}
	case doc["_deleted"] == true:
		code, reason = do(t, http.MethodDelete, u+"/"+url.PathEscape(id)+"?rev="+doc["_rev"].(string), nil)
	default:
		b, _ := json.Marshal(doc)
		code, reason = do(t, http.MethodPut, u+"/"+strings.ReplaceAll(url.PathEscape(id), "%2F", "/"), b)
	}
	if wantCode == http.StatusCreated && (code == http.StatusCreated || code == http.StatusOK) {
		return
	}
	var e struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if !bulk && json.Unmarshal([]byte(reason), &e) == nil {
		reason = e.Error + ": " + e.Reason
	}
	if code != wantCode {
		t.Errorf("%s (bulk %v): HTTP %d %s, want %d", w, bulk, code, reason, wantCode)
		return
	}
	for _, s := range wantText {
		if !strings.Contains(reason, s) {
			t.Errorf("%s (bulk %v): reason %q does not say %q", w, bulk, reason, s)
		}
	}
}

// TestRoles_ReadAsNonMember: members read; a user who is not a member of
// the database gets 403, an anonymous client 401, for documents, listings,
// views and queries alike.
func TestRoles_ReadAsNonMember(t *testing.T) {
	f := newRoleFixture(t)
	id := f.docs["aliceNew"]["_id"].(string)
	reads := []struct{ method, path, body string }{
		{http.MethodGet, "/" + id, ""},
		{http.MethodGet, "/_all_docs?include_docs=true", ""},
		{http.MethodPost, "/_all_docs", `{"keys":["` + id + `"]}`},
		{http.MethodGet, "/_design/aso-views/_view/work?limit=5", ""},
		{http.MethodPost, "/_find", `{"selector":{"type":"transfer"}}`},
		{http.MethodGet, "/_security", ""},
	}
	for _, w := range suiteWriters {
		want := http.StatusOK
		switch w {
		case writerAnonymous:
			want = http.StatusUnauthorized
		case writerNonMember:
			want = http.StatusForbidden
		}
		for _, r := range reads {
			code, body := do(t, r.method, writerURL(t, f.u, w)+r.path, []byte(r.body))
			if code != want {
				t.Errorf("%s: %s %s: HTTP %d %s, want %d", w, r.method, r.path, code, body, want)
			}
		}
	}
}

// TestRoles_ReasonNamesRuleAndRole: a refusal says which rule refused
// which user in which role, so that an operator can tell a wrong
// credential from a wrong write.
func TestRoles_ReasonNamesRuleAndRole(t *testing.T) {
	f := newRoleFixture(t)
	m := f.doc("aliceSub")
	m["state"] = "done"
	b, _ := json.Marshal(m)
	u := couchtest.AsRole(t, f.u, couch.RoleProducer)
	code, body := do(t, http.MethodPut, u+"/"+m["_id"].(string), b)
	want := fmt.Sprintf(`rule \"agent-fields\": user \"test-%s\" (%s) may not change state`, couch.RoleProducer, couch.RoleProducer)
	if code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Fatalf("HTTP %d %s, want 403 with %s", code, body, want)
	}
}

// TestRoles_CommandsWork: what aso's commands do with each role's
// credentials works, and what a role may not do is refused item by item
// with the rule named: a producer enqueues for anyone and kills; a user
// enqueues, kills and retries its own transfers only; the agent claims,
// submits, records and holds the run lock; the operator kills, retries,
// unlocks, resolves conflicts and purges; a reader reads.
func TestRoles_CommandsWork(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	u := newDB(t)
	as := func(w, user, owner string) *couch.Store {
		return open(t, writerURL(t, u, w), c, user, owner, couch.Options{})
	}
	producer, alice := as(couch.RoleProducer, "", "crab"), as(writerAlice, "alice", "alice@host:cli")
	agent, operator := as(couch.RoleAgent, "alice", "host:1:agent"), as(couch.RoleOperator, "", "op@host:cli")
	reader := as(couch.RoleReader, "", "")
	ok := func(res []state.Result, err error) { t.Helper(); mustOK(t, res, err) }

	enqueue(t, producer, requests("bob", 2))
	enqueue(t, alice, requests("alice", 3))
	res, err := alice.Enqueue(ctx, requests("carol", 1))
	if err != nil || res[0].Status != state.Rejected || !strings.Contains(fmt.Sprint(res[0].Err), `rule "own-transfers"`) {
		t.Fatalf("alice enqueues for carol: %+v, %v; want rejected by rule own-transfers", res, err)
	}

	got := claim(t, agent, 3)
	l, err := agent.AcquireLock(ctx, "alice", "host:1:agent", time.Hour)
	if err != nil {
		t.Fatalf("the agent takes the run lock: %v", err)
	}
	ok(statetest.Prepare(ctx, agent, got[:2], "sid-1"))
	ok(statetest.Commit(ctx, agent, []state.Commit{{Transfer: got[0]}, {Transfer: got[1]}}, "job-1"))
	cur, _ := agent.Get(ctx, got[0].ID)
	ok(agent.SetTerminalState(ctx, []state.Terminal{{Transfer: cur, Outcome: state.OutcomeDone, FTSJob: "job-1"}}))
	ok(agent.AbortTransfers(ctx, []state.Abort{{Transfer: got[2], Reason: "no route", Fatal: true}}))

	ok(alice.RequestKill(ctx, []string{got[1].ID}))
	ok(alice.Retry(ctx, []string{got[2].ID}))
	bob := requests("bob", 2)
	if res, err := alice.RequestKill(ctx, []string{bob[0].ID()}); err != nil || !strings.Contains(fmt.Sprint(res[0].Err), `rule "own-transfers"`) {
		t.Fatalf("alice kills bob's transfer: %+v, %v; want refused by rule own-transfers", res, err)
	}
	ok(producer.RequestKill(ctx, []string{bob[0].ID()}))
	ok(operator.Retry(ctx, []string{bob[0].ID()}))
	ok(operator.RequestKill(ctx, []string{bob[1].ID()}))
	if err := operator.Unlock(ctx, "alice", l.Holder, "stuck"); err != nil {
		t.Fatalf("the operator unlocks: %v", err)
	}
	if _, err := operator.ResolveConflicts(ctx, ""); err != nil {
		t.Fatalf("the operator resolves conflicts: %v", err)
	}
	c.Add(48 * time.Hour)
	if n, err := operator.Purge(ctx, state.PurgeOptions{Before: c.Now()}); err != nil || n != 2 {
		t.Fatalf("the operator purges: %d, %v; want the done and the killed transfer", n, err)
	}

	if _, err := reader.Summary(ctx, state.SummaryOptions{}); err != nil {
		t.Fatalf("the reader reads: %v", err)
	}
	if res, err := reader.RequestKill(ctx, []string{bob[0].ID()}); err != nil || !strings.Contains(fmt.Sprint(res[0].Err), `rule "roles"`) {
		t.Fatalf("the reader kills: %+v, %v; want refused by rule roles", res, err)
	}
	if n, _ := agent.Purge(ctx, state.PurgeOptions{Before: c.Now().Add(time.Hour)}); n != 0 {
		t.Fatalf("the agent purged %d transfers: it deletes nothing", n)
	}
}

// TestRoles_KillOfAProducersDocument: aso kill rewrites a document another
// producer wrote in its own forms (a time with an offset, a history entry
// without "from", checksums in capitals, no size) in aso's; the role rules
// see the same request and the same times, and let the kill through.
func TestRoles_KillOfAProducersDocument(t *testing.T) {
	c := newClock()
	u := newDB(t)
	m := producerBase("kill/producer.root")
	m["created"], m["last_update"] = "2026-03-01T13:00:00+01:00", "2026-03-01T07:00:00.5-05:00"
	m["checksums"] = map[string]any{"ADLER32": "0A1B2C3D"}
	delete(m, "size")
	m["history"] = []any{map[string]any{"at": "2026-03-01T13:00:00+01:00", "to": "new", "by": "crab"}}
	b, _ := json.Marshal(m)
	if code, body := httpPut(t, couchtest.AsRole(t, u, couch.RoleProducer), m["_id"].(string), b); code != http.StatusCreated {
		t.Fatalf("the producer's PUT: HTTP %d %s", code, body)
	}
	s := open(t, couchtest.AsRole(t, u, couch.RoleProducer), c, "", "crab", couch.Options{})
	res, err := s.RequestKill(context.Background(), []string{m["_id"].(string)})
	mustOK(t, res, err)
	got, err := s.Get(context.Background(), m["_id"].(string))
	if err != nil || got.State != state.StateKilled || got.Extra["taskname"] == nil {
		t.Fatalf("after the kill: %+v, %v; want killed, the producer's fields kept", got, err)
	}
}
