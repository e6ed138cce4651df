package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/adler32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_EndToEnd runs the agent on a few hundred transfers with random
// retryable failures, missing sources, existing destinations, bad checksums,
// dependencies, priorities and kills, and checks every outcome, every
// destination file, and the simulator's record of submissions.
func TestAgent_EndToEnd(t *testing.T) { endToEnd(t, newWorld(t, endToEndSim)) }

// endToEndSim is the simulator of the end-to-end scenario.
var endToEndSim = ftstest.Options{
	Seed: 11, QueueDelay: 30 * time.Second, StartDelay: 30 * time.Second, TransferTime: 2 * time.Minute,
	FailureRate: 0.15, FailureReasons: []string{"TRANSFER [110] Connection timed out"},
}

// endToEnd is the scenario of TestAgent_EndToEnd, on w's store.
func endToEnd(t *testing.T, w *world) {
	type expect struct {
		kind string
		req  state.Request
		data []byte
	}
	var all []expect
	add := func(kind string, r state.Request, data []byte) state.Request {
		all = append(all, expect{kind, r, data})
		return r
	}
	var good []state.Request
	for i := 0; i < 200; i++ {
		r, data := w.request("good", i, true)
		r.Priority = []int{-1, 0, 2}[i%3]
		good = append(good, add("good", r, data))
	}
	var missing []state.Request
	for i := 0; i < 6; i++ {
		r, _ := w.request("missing", i, false)
		// a file at the destination that no attempt of the transfer
		// wrote (its source is missing): the agent leaves it in place
		w.writeFile(w.dstPath(r), []byte("stale partial copy"))
		missing = append(missing, add("missing", r, nil))
	}
	for i := 0; i < 6; i++ {
		r, data := w.request("exists", i, true)
		w.writeFile(w.dstPath(r), []byte("somebody else's file"))
		add("exists", r, data)
	}
	for i := 0; i < 6; i++ {
		r, data := w.request("badsum", i, true)
		r.Checksums["adler32"] = fmt.Sprintf("%08x", adler32.Checksum(data)^0x5a5a)
		add("badsum", r, data)
	}
	for i := 0; i < 10; i++ {
		r, data := w.request("dependent", i, true)
		if i%2 == 0 {
			r.DependsOn = []string{good[i].ID()}
			add("dep-ok", r, data)
		} else {
			r.DependsOn = []string{missing[i%len(missing)].ID()}
			add("dep-failed", r, data)
		}
	}
	var killNow, killRunning []state.Request
	for i := 0; i < 5; i++ {
		r, data := w.request("killnow", i, true)
		killNow = append(killNow, add("killed", r, data))
		r, data = w.request("killrunning", i, true)
		r.Priority = 10 // claimed and submitted in the first pass
		killRunning = append(killRunning, add("killed", r, data))
	}
	reqs := make([]state.Request, len(all))
	for i, e := range all {
		reqs[i] = e.req
	}
	w.enqueue(reqs)
	ctx := context.Background()
	killRes, err := w.store.RequestKill(ctx, ids(killNow))
	must(t, err)
	for _, r := range killRes {
		must(t, r.Err)
	}

	a := w.agent(w.config("agent-1"), nil)
	var passes int
	a.OnPass = func(ps agent.PassStats) {
		passes = ps.Pass
		if ps.Pass == 1 {
			for _, r := range killRunning {
				if got := w.get(r.ID()).State; got != state.StateSubmitted {
					t.Errorf("kill target %s is %s after the first pass, want submitted", r.ID(), got)
				}
			}
			res, err := w.store.RequestKill(ctx, ids(killRunning))
			must(t, err)
			for _, r := range res {
				must(t, r.Err)
			}
		}
	}
	if err := a.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("drained in %d passes, %s of simulated time", passes, w.clk.Now().Sub(epoch))

	retried := 0
	for _, e := range all {
		tr := w.get(e.req.ID())
		dst := w.dstPath(e.req)
		got, readErr := os.ReadFile(dst)
		timedOut3 := tr.State == state.StateFailed && strings.Contains(tr.Reason, "Connection timed out") && tr.Attempts == 3
		switch e.kind {
		case "good", "dep-ok":
			if tr.State == state.StateDone {
				if !bytes.Equal(got, e.data) {
					t.Errorf("%s %s: done but destination content differs (%v)", e.kind, tr.ID, readErr)
				}
				if tr.Attempts > 0 {
					retried++
				}
				continue
			}
			// the random timeouts may fail a dependency of dep-ok three times:
			// then dep-ok fails at once, naming it
			depFailed := e.kind == "dep-ok" && tr.State == state.StateFailed && tr.Attempts == 0 &&
				w.get(e.req.DependsOn[0]).State == state.StateFailed && strings.Contains(tr.Reason, e.req.DependsOn[0])
			if !timedOut3 && !depFailed {
				t.Errorf("%s %s: %s %q attempts %d, want done (or failed after 3 timeouts, or after its dependency failed)", e.kind, tr.ID, tr.State, tr.Reason, tr.Attempts)
			}
			if readErr == nil {
				t.Errorf("%s %s: failed but its destination copy is still there", e.kind, tr.ID)
			}
		case "missing":
			wantFailed(t, tr, "No such file or directory", timedOut3)
			if string(got) != "stale partial copy" || !timedOut3 && !strings.Contains(tr.Reason, "left in place: ") {
				t.Errorf("missing %s: the file at the destination was touched (%q, %v) or not said left in place (%q)", tr.ID, got, readErr, tr.Reason)
			}
		case "exists":
			wantFailed(t, tr, "Destination file exists", timedOut3)
			if string(got) != "somebody else's file" {
				t.Errorf("exists %s: the file already at the destination was touched: %q %v", tr.ID, got, readErr)
			}
		case "badsum":
			wantFailed(t, tr, "checksum do not match", timedOut3)
			if readErr == nil {
				t.Errorf("badsum %s: destination copy left behind", tr.ID)
			}
		case "dep-failed":
			wantFailed(t, tr, "dependency "+tr.DependsOn[0]+" is failed", false)
			if tr.FTSJob != "" || tr.SubmitSID != "" {
				t.Errorf("dep-failed %s was submitted (job %q)", tr.ID, tr.FTSJob)
			}
		case "killed":
			if tr.State != state.StateKilled {
				t.Errorf("killed %s: %s %q, want killed", tr.ID, tr.State, tr.Reason)
			}
			if tr.FTSJob != "" && tr.FTSFileID == 0 {
				t.Errorf("killed %s: its FTS file ID was never recorded", tr.ID)
			}
			if readErr == nil {
				t.Errorf("killed %s: destination copy left behind", tr.ID)
			}
		}
	}
	if retried == 0 {
		t.Errorf("no transfer succeeded after a retry: the retry path was not exercised")
	}
	checkSimFiles(t, w.sim.Files(), all[0].req.ID)
	// killed before the run: never submitted
	sub := submissionsByTransfer(w.sim.Files())
	for _, r := range killNow {
		if n := len(sub[r.ID()]); n != 0 {
			t.Errorf("transfer %s killed before the run was submitted %d times", r.ID(), n)
		}
	}
	// priorities: every priority-2 transfer was first submitted no later than any priority -1 one
	var lastHigh, firstLow time.Time
	for _, r := range good {
		first := sub[r.ID()][0].Submitted
		switch r.Priority {
		case 2:
			if first.After(lastHigh) {
				lastHigh = first
			}
		case -1:
			if firstLow.IsZero() || first.Before(firstLow) {
				firstLow = first
			}
		}
	}
	if lastHigh.After(firstLow) {
		t.Errorf("a priority 2 transfer was first submitted at %s, after a priority -1 one at %s", lastHigh, firstLow)
	}
}

func wantFailed(t *testing.T, tr state.Transfer, reason string, alt bool) {
	t.Helper()
	if alt {
		return
	}
	if tr.State != state.StateFailed || !strings.Contains(tr.Reason, reason) {
		t.Errorf("%s: %s %q, want failed with %q", tr.ID, tr.State, tr.Reason, reason)
	}
}

func ids(rs []state.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID()
	}
	return out
}

// submissionsByTransfer groups the simulator's files by aso transfer ID,
// in submission order.
func submissionsByTransfer(files []ftstest.SimFile) map[string][]ftstest.SimFile {
	m := map[string][]ftstest.SimFile{}
	for _, f := range files {
		id := transferIDOf(f)
		m[id] = append(m[id], f)
	}
	return m
}

func transferIDOf(f ftstest.SimFile) string {
	var md struct {
		TransferID string `json:"transfer_id"`
	}
	_ = jsonUnmarshal(f.Metadata, &md)
	return md.TransferID
}

// checkSimFiles proves from the simulator's record that no transfer was
// active in two FTS jobs at once, and no attempt was submitted twice: a
// transfer has a new submission only after its previous one ended.
func checkSimFiles(t *testing.T, files []ftstest.SimFile, _ func() string) {
	t.Helper()
	for id, subs := range submissionsByTransfer(files) {
		if id == "" {
			t.Errorf("a file was submitted without a transfer_id in its metadata")
			continue
		}
		sids := map[string]bool{}
		for i, f := range subs {
			if sids[f.SID] {
				t.Errorf("transfer %s: sid %s submitted twice", id, f.SID)
			}
			sids[f.SID] = true
			if i < len(subs)-1 && !terminalFile(f.State) {
				t.Errorf("transfer %s: submitted again while job %s was still %s", id, f.JobID, f.State)
			}
		}
	}
}

func terminalFile(s string) bool { return s == "FINISHED" || s == "FAILED" || s == "CANCELED" }
