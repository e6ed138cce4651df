package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// TestEnqueue_DestinationOwner: a request for a destination a done
// transfer delivered another file to is rejected naming that transfer (exit
// 64, the other records stored); with --replace, or "replace": true, it is
// stored and says whom it replaces; one with the same file is stored and
// says it is already there.
func TestEnqueue_DestinationOwner(t *testing.T) {
	w := newDoneWorld(t)
	owner := w.done(t, "a.root", nil, nil)
	req := func(user, sum string, extra string) (string, string) {
		r := state.Request{User: user, Source: "T2_C", Destination: "T2_B", SourceLFN: "/store/temp/" + user + ".root", DestinationLFN: "/store/user/a.root",
			Size: int64(len(payload)), Checksums: map[string]string{"adler32": sum}}
		b, _ := json.Marshal(r)
		return strings.TrimSuffix(string(b), "}") + extra + "}\n", r.ID()
	}
	enqueue := func(in string, args ...string) result {
		return invocation{stdin: strings.NewReader(in)}.run(t, append([]string{"enqueue", w.flag, "--log-level", "error"}, args...)...)
	}
	other, bob := req("bob", "0000abcd", "")
	ok := strings.Replace(other, "/store/user/a.root", "/store/user/b.root", 1) // another destination
	r := enqueue(other+ok).wantCode(t, 64)
	r.wantStdout(t, fmt.Sprintf("line 1: rejected: destination owned by transfer %s (user alice, done) with another file", owner), "1 stored, 0 already queued, 1 rejected")
	r = enqueue(other, "--replace").wantCode(t, 0)
	r.wantStdout(t, fmt.Sprintf("line 1: stored %s: replaces transfer %s (user alice, done)", bob, owner), "1 stored, 0 already queued, 0 rejected")
	if h := w.get(t, bob).History; !strings.Contains(h[0].Reason, "replaces transfer "+owner) {
		t.Errorf("replacing transfer's history %+v does not name the owner", h)
	}
	// the replaced owner records it too, and aso status shows it
	o := w.get(t, owner)
	if h := o.History[len(o.History)-1]; o.SupersededBy != bob || o.State != state.StateDone ||
		!strings.HasPrefix(h.Reason, "replaced by transfer "+bob+" (user bob)") || h.From != state.StateDone || h.To != state.StateDone {
		t.Errorf("replaced owner: state %s, superseded_by %q, history %+v; want done, %s and a last entry naming it", o.State, o.SupersededBy, o.History, bob)
	}
	invocation{}.run(t, "status", w.flag, owner).wantCode(t, 0).
		wantStdout(t, "Superseded by:    transfer "+bob, "replaced by transfer "+bob+" (user bob), which copies another file to the destination")
	dave, daveID := req("dave", "0000abcd", `,"replace":true`)
	r = enqueue(dave, "--json").wantCode(t, 0)
	var out cmd.EnqueueOutcome
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.ID != daveID || !strings.Contains(out.Note, "replaces transfer "+owner) || out.Status != state.Stored {
		t.Errorf("--json: %+v, %v; want stored with a note naming the replaced owner", out, err)
	}
	if o := w.get(t, owner); o.SupersededBy != bob {
		t.Errorf("replaced again: superseded_by %q, want the first replacement %s kept", o.SupersededBy, bob)
	}
	same, sameID := req("erin", fmt.Sprintf("%08x", adler32.Checksum(payload)), "")
	r = enqueue(same).wantCode(t, 0)
	r.wantStdout(t, fmt.Sprintf("line 1: stored %s: already there: transfer %s (user alice, done) delivered this file", sameID, owner))
}

// TestEnqueue_SupersedesAFailedOwner: a request for the destination of a
// transfer that recorded its ownership and failed is stored and
// supersedes it, and both transfers say so: the new one's note and first
// history entry, the failed one's superseded_by and last history entry,
// which aso status and aso list show.
func TestEnqueue_SupersedesAFailedOwner(t *testing.T) {
	ctx := context.Background()
	flag, path := stateFile(t)
	old := state.Request{User: "alice", Source: "T2_A", Destination: "T2_B", SourceLFN: "/store/temp/a.root", DestinationLFN: "/store/user/a.root", Size: 10}
	st, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "alice", Owner: "worker:1:test"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Enqueue(ctx, []state.Request{old}); err != nil {
		t.Fatal(err)
	}
	ts, err := statetest.Claim(ctx, st, 1)
	if err != nil || len(ts) != 1 {
		t.Fatal(ts, err)
	}
	if res, err := statetest.Prepare(ctx, st, ts, "sid-1"); err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	tr, _ := st.Get(ctx, ts[0].ID)
	if res, err := st.AbortTransfers(ctx, []state.Abort{{Transfer: tr, Fatal: true, Reason: "refused"}}); err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	st.Close()

	r := state.Request{User: "bob", Source: "T2_C", Destination: "T2_B", SourceLFN: "/store/temp/b.root", DestinationLFN: old.DestinationLFN, Size: 10}
	line, _ := json.Marshal(r)
	res := invocation{stdin: strings.NewReader(string(line))}.run(t, "enqueue", flag, "--json").wantCode(t, 0)
	var out cmd.EnqueueOutcome
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Status != state.Stored || !strings.Contains(out.Note, "supersedes transfer "+old.ID()) {
		t.Fatalf("enqueue --json: %+v, %v; want stored, superseding %s", out, err, old.ID())
	}
	w := &doneWorld{path: path}
	if h := w.get(t, r.ID()).History; !strings.Contains(h[0].Reason, "supersedes transfer "+old.ID()) {
		t.Errorf("new transfer's history %+v does not name the one it supersedes", h)
	}
	o := w.get(t, old.ID())
	if h := o.History[len(o.History)-1]; o.State != state.StateFailed || o.SupersededBy != r.ID() || !strings.HasPrefix(h.Reason, "superseded by transfer "+r.ID()+" (user bob)") {
		t.Errorf("failed owner: %s, superseded_by %q, history %+v; want failed, %s, a last entry naming it", o.State, o.SupersededBy, o.History, r.ID())
	}
	invocation{}.run(t, "status", flag, old.ID()).wantCode(t, 0).wantStdout(t, "transfer "+r.ID()+", the owner of the destination after it",
		"superseded by transfer "+r.ID()+" (user bob), the owner of the destination from now on")
	invocation{}.run(t, "list", flag, "--user", "alice", "--json").wantCode(t, 0).wantStdout(t, `"superseded_by":"`+r.ID()+`"`)
}
