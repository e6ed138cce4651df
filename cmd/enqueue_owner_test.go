package cmd_test

import (
	"encoding/json"
	"fmt"
	"hash/adler32"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
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
