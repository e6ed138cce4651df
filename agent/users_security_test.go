package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestMain stops the CouchDB test server when one was started.
func TestMain(m *testing.M) { os.Exit(couchtest.Main(m)) }

const otherUser = "bob"

// sharedStore is one database seen by two users' handles, and a way to
// read a stored document exactly as stored.
type sharedStore struct {
	alice, bob state.Store
	raw        func(t *testing.T, id string) []byte
}

// TestAgent_TouchesOnlyItsUser: transfers of two users share one database;
// an agent runs for alice to completion. Every document of bob, in every
// state (new, acquired with an expired lease, submitted, kill requested,
// done), is byte for byte unchanged with the same revision, and none of
// bob's transfers reached FTS. Invalid documents of alice in the same
// database are skipped and left as they are.
func TestAgent_TouchesOnlyItsUser(t *testing.T) {
	t.Run("memfile", func(t *testing.T) {
		w := newWorld(t, ftstest.Options{Seed: 5})
		bob, err := memfile.Open(w.path, state.Config{Agent: state.Agent{User: otherUser, Owner: "bob-agent"}, Policy: w.config("").Policy, Now: w.clk.Now})
		must(t, err)
		t.Cleanup(func() { bob.Close() })
		for id, doc := range invalidDocs() {
			memfiletest.AppendDocs(t, w.path, doc(id))
		}
		touchesOnlyItsUser(t, w, sharedStore{alice: w.open("agent-alice"), bob: bob, raw: func(t *testing.T, id string) []byte {
			tr, err := bob.Get(context.Background(), id)
			must(t, err)
			b, err := json.Marshal(tr) // with _rev: the file's counter
			must(t, err)
			return b
		}})
	})
	t.Run("couch", func(t *testing.T) {
		w := newWorld(t, ftstest.Options{Seed: 6})
		u := couchtest.DB(t)
		ctx := context.Background()
		for id, doc := range invalidDocs() { // written before Init, as by an older tool
			putRawDoc(t, u+"/"+id, doc(id))
		}
		must(t, couch.Init(ctx, couch.Options{URL: u}))
		open := func(user, owner string) *couch.Store {
			s, err := couch.Open(ctx, couch.Options{URL: u}, state.Config{Agent: state.Agent{User: user, Owner: owner}, Policy: w.config("").Policy, Now: w.clk.Now})
			must(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		touchesOnlyItsUser(t, w, sharedStore{alice: open(testUser, "agent-alice"), bob: open(otherUser, "bob-agent"), raw: func(t *testing.T, id string) []byte {
			return rawDoc(t, u+"/"+id)
		}})
	})
}

func touchesOnlyItsUser(t *testing.T, w *world, st sharedStore) {
	ctx := context.Background()
	var mine, theirs []state.Request
	for i := 0; i < 20; i++ {
		r, _ := w.request("mine", i, true)
		mine = append(mine, r)
		b, _ := w.request("theirs", i, true) // sources exist: a wrongful submission would succeed
		b.User = otherUser
		b.Priority = 100 // ahead of alice's in any shared order
		theirs = append(theirs, b)
	}
	for _, s := range []struct {
		st   state.Store
		reqs []state.Request
	}{{st.alice, mine}, {st.bob, theirs}} {
		res, err := s.st.Enqueue(ctx, s.reqs)
		must(t, err)
		for _, r := range res {
			if r.Status != state.Stored {
				t.Fatalf("enqueue %s: %s %v", r.ID, r.Status, r.Err)
			}
		}
	}
	// bob's own agent, earlier: claims 12, submits 8 to a job, finishes 2,
	// asks to kill one submitted and one new, and dies holding 4 leases.
	claimed, err := statetest.Claim(ctx, st.bob, 12)
	must(t, err)
	if len(claimed) != 12 {
		t.Fatalf("bob claimed %d, want 12", len(claimed))
	}
	commits := make([]state.Commit, 8)
	for i, tr := range claimed[:8] {
		commits[i] = state.Commit{Transfer: tr, SourcePFN: "file:///bob/src", DestPFN: "file:///bob/dst", FileID: int64(i + 1)}
	}
	res, err := statetest.Commit(ctx, st.bob, commits, "bob-job-0001")
	mustResults(t, res, err)
	var done []state.Terminal
	for _, r := range res[:2] {
		tr, err := st.bob.Get(ctx, r.ID)
		must(t, err)
		done = append(done, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "bob-job-0001"})
	}
	res, err = st.bob.SetTerminalState(ctx, done)
	mustResults(t, res, err)
	unclaimed := map[string]bool{}
	for _, r := range theirs {
		unclaimed[r.ID()] = true
	}
	for _, tr := range claimed {
		delete(unclaimed, tr.ID)
	}
	kill := []string{claimed[5].ID}
	for id := range unclaimed {
		kill = append(kill, id) // one new transfer: killed at once
		break
	}
	res, err = st.bob.RequestKill(ctx, kill)
	mustResults(t, res, err)
	w.clk.Advance(time.Hour) // bob's leases expired long ago

	sumBefore, err := st.alice.Summary(ctx, state.SummaryOptions{})
	must(t, err)
	if len(sumBefore.Invalid) != len(invalidDocs()) {
		t.Fatalf("Summary.Invalid before the run = %+v, want the %d invalid documents of alice", sumBefore.Invalid, len(invalidDocs()))
	}
	before := map[string][]byte{}
	for _, r := range theirs {
		before[r.ID()] = st.raw(t, r.ID())
	}
	cfg := w.config("agent-alice")
	a := w.agent(cfg, st.alice.(agent.Store))
	if err := a.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range mine {
		tr, err := st.alice.Get(ctx, r.ID())
		must(t, err)
		if tr.State != state.StateDone {
			t.Errorf("alice's %s: %s %q, want done", tr.ID, tr.State, tr.Reason)
		}
	}
	for _, r := range theirs {
		if after := st.raw(t, r.ID()); !bytes.Equal(after, before[r.ID()]) {
			t.Errorf("bob's %s changed:\nbefore %s\nafter  %s", r.ID(), before[r.ID()], after)
		}
		if _, err := os.Stat(w.dstPath(r)); err == nil {
			t.Errorf("bob's %s was copied", r.ID())
		}
	}
	sumAfter, err := st.alice.Summary(ctx, state.SummaryOptions{})
	must(t, err)
	if a, b := fmt.Sprint(sumBefore.Invalid), fmt.Sprint(sumAfter.Invalid); a != b {
		t.Errorf("the invalid documents changed during the run:\nbefore %s\nafter  %s", a, b)
	}
	bobs := map[string]bool{}
	for _, r := range theirs {
		bobs[r.ID()] = true
	}
	for _, f := range w.sim.Files() {
		if bobs[transferIDOf(f)] {
			t.Errorf("bob's transfer %s was submitted to FTS in job %s", transferIDOf(f), f.JobID)
		}
	}
}

// invalidDocs are documents of alice that are not valid transfers, by ID:
// the agent must skip them, leave them as they are, and finish its work.
func invalidDocs() map[string]func(id string) string {
	return map[string]func(string) string{
		"1111111111111111111111111111111111111111111111111111111111111111": func(id string) string {
			return `{"_id":"` + id + `","type":"transfer","user":"` + testUser + `","state":"new","size":"huge","claim_key":"0"}`
		},
		"2222222222222222222222222222222222222222222222222222222222222222": func(id string) string {
			return `{"_id":"` + id + `","type":"transfer","user":"` + testUser + `","state":"submitted","fts_job":7,"created":12}`
		},
		"3333333333333333333333333333333333333333333333333333333333333333": func(id string) string {
			return `{"_id":"` + id + `","type":"transfer","user":"` + testUser + `","state":"exploded","source_lfn":"/store/../x","claim_key":"0"}`
		},
	}
}

// putRawDoc writes a document with a plain HTTP PUT.
func putRawDoc(t *testing.T, url, doc string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(doc))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT %s: HTTP %d %s", url, resp.StatusCode, b)
	}
}

// rawDoc returns the body of GET url: a CouchDB document as stored.
func rawDoc(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %s", url, resp.StatusCode, b)
	}
	return b
}

func mustResults(t *testing.T, res []state.Result, err error) {
	t.Helper()
	must(t, err)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
}
