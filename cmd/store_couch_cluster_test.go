package cmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestRun_TwoCoordinators starts two agents of one user at the same moment,
// each talking to its own coordinator of a simulated CouchDB cluster whose
// replicas see each other's writes only after two seconds (a write on a
// stale revision is stored as a conflicting leaf and answered 202, as a
// real cluster does). On a real 3-node cluster, this is where both agents
// took the run lock and submitted transfers twice. Every round, at most
// one agent may work; in the end nothing is lost, nothing submitted twice,
// every conflict was decided by the agents (which run as plain aso-agent
// users and set the losing revisions aside), and aso resolve-conflicts,
// run as aso-operator, deletes what they set aside.
func TestRun_TwoCoordinators(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(51), Seed: 51})
	cl := couchtest.NewCluster(t, w.StateURL, 2*time.Second)
	const rounds = 4
	for r := 0; r < rounds; r++ {
		w.AddMix("alice", 15)
		ps := []*proctest.Proc{
			w.StartAgent("alice", "--state", cl.URL(0), "--lock-ttl", "10s"),
			w.StartAgent("alice", "--state", cl.URL(1), "--lock-ttl", "10s"),
		}
		worked := 0
		for _, p := range ps {
			switch code := p.Wait(2 * time.Minute); code {
			case cmd.ExitOK:
				worked++
			case cmd.ExitLocked:
				if ids := w.TouchedBy(p.Pid()); len(ids) > 0 {
					t.Errorf("round %d: %s exited %d but touched %d transfers, e.g. %s", r, p.Name, code, len(ids), ids[0])
				}
			default:
				t.Fatalf("round %d: %s exited %d\n%s", r, p.Name, code, p.Tail(40))
			}
		}
		if worked == 0 {
			t.Errorf("round %d: neither agent worked\n%s\n%s", r, ps[0].Tail(15), ps[1].Tail(15))
		}
		// the replicas meet: the cluster's lag runs out at a known moment
		time.Sleep(time.Until(cl.Met()))
	}
	if cl.Branched.Load() == 0 {
		t.Fatal("no write was made on a stale revision: the race was not exercised")
	}
	w.RunToEnd("alice", 2*time.Minute, "--state", cl.URL(0), "--lock-ttl", "10s")
	rep := w.Check(proctest.CheckOptions{})
	t.Logf("%d rounds, %d writes on stale revisions: %s", rounds, cl.Branched.Load(), rep)
	if rep.Duplicated != 0 {
		t.Errorf("%d transfers submitted twice", rep.Duplicated)
	}
	rep.Require(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := couch.Open(ctx, couch.Options{URL: w.CouchURL(couch.RoleReader)}, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Conflicted != 0 {
		t.Errorf("%d documents left with conflicts no agent decided", sum.Conflicted)
	}
	p := w.Start("resolve", "resolve-conflicts", "--state", w.StateURL, "--all-users")
	if code := p.Wait(time.Minute); code != 0 {
		t.Fatalf("aso resolve-conflicts exited %d\n%s", code, p.Tail(20))
	}
	if sum, err = s.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Conflicted+sum.Superseded != 0 {
		t.Errorf("after aso resolve-conflicts: %d conflicted, %d superseded (%v)", sum.Conflicted, sum.Superseded, err)
	}
	w.Check(proctest.CheckOptions{}).Require(t)
}

// TestStatus_CountsConflictedDocuments makes a transfer with two leaf
// revisions (claims of two agents stored by two replicas) and shows the
// count in aso status, text and JSON, until aso resolve-conflicts ends it.
func TestStatus_CountsConflictedDocuments(t *testing.T) {
	ctx := context.Background()
	u := couchtest.DB(t)
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	s, err := couch.Open(ctx, couch.Options{URL: u}, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := state.Request{User: "alice", Source: "T2_A", Destination: "T2_B", SourceLFN: "/store/a", DestinationLFN: "/store/a", Size: 1}
	if _, err := s.Enqueue(ctx, []state.Request{req}); err != nil {
		t.Fatal(err)
	}
	base, err := s.Get(ctx, req.ID())
	if err != nil {
		t.Fatal(err)
	}
	c, err := kivik.New("couch", u[:strings.LastIndex(u, "/")+1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	db := c.DB(u[strings.LastIndex(u, "/")+1:])
	_, parent, _ := strings.Cut(base.Rev, "-")
	for i, owner := range []string{"host:1:a", "host:2:b"} {
		tr := base
		if err := state.Claim(&tr, state.Agent{User: "alice", Owner: owner}, time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tr)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		hash := strings.Repeat(string(rune('a'+i)), 32)
		m["_rev"], m["_revisions"] = "2-"+hash, map[string]any{"start": 2, "ids": []string{hash, parent}}
		if _, err := db.BulkDocs(ctx, []any{m}, kivik.Param("new_edits", false)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runAso(t, "status", "--state", u, "--all-users")
	if code != 0 || !strings.Contains(out, "Conflicted documents (resolved by the user's next agent run): 1\n") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runAso(t, "status", "--state", u, "--all-users", "--json")
	var js struct {
		Conflicted int `json:"conflicted"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || js.Conflicted != 1 {
		t.Fatalf("status --json: exit %d, conflicted %d (%v): %s", code, js.Conflicted, err, out)
	}
	// no agent decided it: aso resolve-conflicts does, by the same rules,
	// and deletes the other revision
	code, out, errs = runAso(t, "resolve-conflicts", "--state", u, "--all-users")
	if code != 0 || out != "resolved 1 transfers, deleted 1 conflicting revisions\n" {
		t.Fatalf("resolve-conflicts: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, _ = runAso(t, "status", "--state", u, "--all-users"); code != 0 || strings.Contains(out, "onflict") {
		t.Fatalf("status after resolve-conflicts: exit %d, stdout %q", code, out)
	}
}

// TestRun_LaggingViews runs one agent whose views answer as they were up to
// four seconds earlier, as a view built on another shard copy may: the
// active view shows none of the jobs the agent submits. The agent must not
// take that for a drained queue: it reads its own transfers by ID before
// exiting, and exits 0 only with every transfer terminal.
func TestRun_LaggingViews(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	w := proctest.New(t, proctest.Options{Couch: true, Sim: fastSim(53), Seed: 53})
	cl := couchtest.NewCluster(t, w.StateURL, time.Second)
	cl.ViewLag.Store(int64(4 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := couch.Open(ctx, couch.Options{URL: couchtest.AsRole(t, cl.URL(0), couch.RoleReader)}, state.Config{Agent: state.Agent{User: "alice", Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// the view as it is before anything is submitted: no active job
	if jobs, err := s.ActiveJobs(ctx, "alice"); err != nil || len(jobs) != 0 {
		t.Fatalf("active jobs before the run: %v, %v", jobs, err)
	}
	w.Add("alice", proctest.Good, 12)
	p := w.StartAgent("alice", "--state", cl.URL(0), "--lock-ttl", "10s") // a busy machine: no lost lock
	if code := p.Wait(2 * time.Minute); code != cmd.ExitOK {
		t.Fatalf("%s exited %d\n%s", p.Name, code, p.Tail(40))
	}
	rep := w.Check(proctest.CheckOptions{})
	t.Logf("%s after %s", rep, p.Runtime().Round(time.Millisecond))
	rep.Require(t)
}
