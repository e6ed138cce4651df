package cmd_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// extraRequests are three more requests of alice, on link T2_A->T2_B.
const extraRequests = `{"user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/d", "destination_lfn": "/d", "size": 1}
{"user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/e", "destination_lfn": "/e", "size": 1}
{"user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/f", "destination_lfn": "/f", "size": 1}
`

// queue is a store holding alice's transfers in every state, set up through
// aso and an agent working two hours ago; bob has one new transfer.
type queue struct {
	flag, path string
	// submitted (stale), acquired (stuck, kill requested), failed, done,
	// retried (new again after failing) and killed (from new).
	submitted, acquired, failed, done, retried, killed state.Transfer
}

func newQueue(t *testing.T) *queue {
	t.Helper()
	flag, path := stateFile(t)
	aso(t, flag, "enqueue", "-f", requestsDir+"good.jsonl").wantCode(t, 0)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, flag, "enqueue").wantCode(t, 0)
	q := &queue{flag: flag, path: path}
	agent := newPastAgent(t, path, "alice", 2*time.Hour)
	q.submitted = agent.submit("job-1")
	q.acquired = agent.claim()
	q.failed = agent.finish("job-2", state.OutcomeFailed, "TRANSFER ERROR: checksum mismatch")
	q.done = agent.finish("job-3", state.OutcomeDone, "")
	q.retried = agent.finish("job-4", state.OutcomeFailed, "SOURCE file does not exist")
	q.killed = agent.claim() // the last one, claimed only to learn its ID ...
	agent.st.AbortTransfers(t.Context(), []state.Abort{{Transfer: q.killed, NoPenalty: true}})

	r := aso(t, flag, "--user", "alice", "kill", q.acquired.ID, q.killed.ID).wantCode(t, 0)
	r.wantStdout(t,
		q.acquired.ID+": kill requested (acquired; the agent cancels it)\n",
		q.killed.ID+": killed\n",
		"1 killed, 1 kill requested, 0 already terminal, 0 not found, 0 failed\n",
	)
	r = aso(t, flag, "retry", q.retried.ID).wantCode(t, 0)
	if want := q.retried.ID + ": queued again\n"; !strings.Contains(r.stdout, want) {
		t.Fatalf("retry: stdout lacks %q:\n%s", want, r.stdout)
	}
	return q
}

func TestStatus_JSONAfterEnqueueKillRetry(t *testing.T) {
	q := newQueue(t)
	r := aso(t, q.flag, "--user", "alice", "status", "--json").wantCode(t, 0)
	var got struct {
		User          string                         `json:"user"`
		Total         int                            `json:"total"`
		ByState       map[state.State]int            `json:"by_state"`
		ByLink        map[string]map[state.State]int `json:"by_link"`
		ByUser        map[string]any                 `json:"by_user"`
		OldestWaiting *state.Transfer                `json:"oldest_waiting"`
		Stale         []state.Transfer               `json:"stale"`
		StuckAcquired []state.Transfer               `json:"stuck_acquired"`
		Invalid       []state.InvalidDoc             `json:"invalid"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if got.User != "alice" || got.Total != 6 {
		t.Errorf("user %q total %d, want alice 6", got.User, got.Total)
	}
	for _, s := range state.States {
		if n, ok := got.ByState[s]; !ok || n != 1 {
			t.Errorf("by_state[%s] = %d (present %v), want 1", s, n, ok)
		}
	}
	sum := 0
	for _, m := range got.ByLink {
		if len(m) != len(state.States) {
			t.Errorf("by_link entry %v lacks states", m)
		}
		for _, n := range m {
			sum += n
		}
	}
	if sum != 6 || got.ByLink[q.submitted.Link()][state.StateSubmitted] != 1 {
		t.Errorf("by_link %v: want 6 transfers, %s with the submitted one", got.ByLink, q.submitted.Link())
	}
	if got.ByUser != nil {
		t.Errorf("by_user %v for one user, want none", got.ByUser)
	}
	if got.OldestWaiting == nil || got.OldestWaiting.ID != q.retried.ID {
		t.Errorf("oldest waiting %+v, want the retried transfer %s", got.OldestWaiting, q.retried.ID)
	}
	if len(got.Stale) != 1 || got.Stale[0].ID != q.submitted.ID || got.Stale[0].FTSJob != "job-1" {
		t.Errorf("stale %+v, want the transfer submitted two hours ago", got.Stale)
	}
	if len(got.StuckAcquired) != 1 || got.StuckAcquired[0].ID != q.acquired.ID || !got.StuckAcquired[0].KillRequested {
		t.Errorf("stuck acquired %+v, want %s with kill_requested", got.StuckAcquired, q.acquired.ID)
	}
	if got.Invalid == nil || len(got.Invalid) != 0 {
		t.Errorf("invalid %v, want []", got.Invalid)
	}

	r = aso(t, q.flag, "--user", "alice", "status", "--json", "--stale-after", "3h").wantCode(t, 0)
	if !strings.Contains(r.stdout, `"stale": []`) {
		t.Errorf("--stale-after 3h: want no stale transfer:\n%s", r.stdout)
	}
	all := statusOf(t, q.flag, "--all-users")
	if all["total"] != 7.0 || count(t, all, state.StateNew) != 2 {
		t.Errorf("--all-users: total %v, new %d; want 7, 2", all["total"], count(t, all, state.StateNew))
	}
	if bob := all["by_user"].(map[string]any)["bob"].(map[string]any); bob["new"] != 1.0 || len(bob) != 6 {
		t.Errorf("by_user[bob] = %v", bob)
	}
	bob := statusOf(t, q.flag, "--user", "bob")
	if bob["total"] != 1.0 {
		t.Errorf("bob: total %v, want 1", bob["total"])
	}
}

func TestStatus_Text(t *testing.T) {
	q := newQueue(t)
	r := invocation{env: map[string]string{"USER": "alice"}}.run(t, q.flag, "status").wantCode(t, 0)
	out := r.stdout
	wantMatch(t, out, `(?m)^Transfers of user alice: 6$`,
		`(?m)^new\s+1$`, `(?m)^acquired\s+1$`, `(?m)^submitted\s+1$`, `(?m)^done\s+1$`, `(?m)^failed\s+1$`, `(?m)^killed\s+1$`,
		`(?m)^LINK\s+NEW\s+ACQUIRED\s+SUBMITTED\s+DONE\s+FAILED\s+KILLED\s+TOTAL$`,
		`(?m)^T2_US_Nebraska->T1_US_FNAL_Disk(\s+\d){7}$`,
		`(?m)^Oldest waiting: `+q.retried.ID+`, `,
		`(?m)^Stale submitted transfers \(no update for 45m0s\): 1$`,
		`(?m)^`+q.submitted.ID+`\s+\S+\s+job-1\s+`,
		`(?m)^Stuck acquired transfers \(lease expired\): 1$`,
		`(?m)^`+q.acquired.ID+`\s+\S+\s+worker:42:test\s+`,
	)
	if strings.Contains(out, "USER ") {
		t.Errorf("one user's status shows a user table:\n%s", out)
	}
	all := aso(t, q.flag, "status", "--all-users").wantCode(t, 0).stdout
	wantMatch(t, all, `(?m)^Transfers of all users: 7$`, `(?m)^USER\s+NEW`, `(?m)^bob\s+1\s+0\s+0\s+0\s+0\s+0\s+1$`)
	r = aso(t, q.flag, "status").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "no user") {
		t.Errorf("status without a user: %q", r.stderr)
	}
}

func TestStatus_OneTransferWithHistory(t *testing.T) {
	q := newQueue(t)
	out := aso(t, q.flag, "status", q.submitted.ID).wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^ID:\s+`+q.submitted.ID+`$`,
		`(?m)^State:\s+submitted$`,
		`(?m)^User:\s+alice$`,
		`(?m)^Link:\s+T2_US_Nebraska->T1_US_FNAL_Disk$`,
		`(?m)^Source LFN:\s+/store/temp/user/alice/run1/out_2.root$`,
		`(?m)^Size:\s+2097152 bytes$`,
		`(?m)^Checksums:\s+adler32 1b2c3d4e$`,
		`(?m)^Priority:\s+5$`,
		`(?m)^FTS job:\s+job-1 \(file 7\)$`,
		`(?m)^Destination PFN:\s+file:///dst/store/user/alice/run1/out_2.root$`,
		`(?m)^Progress:\s+SUBMITTED, 0 bytes`,
		`(?m)^History: 3$`,
		`(?m)^AT\s+FROM\s+TO\s+BY\s+REASON$`,
		`(?m)^\S+\s+-\s+new\s+\S+:cli\s+enqueued$`,
		`(?m)^\S+\s+new\s+acquired\s+worker:42:test\s*$`,
		`(?m)^\S+\s+acquired\s+submitted\s+worker:42:test\s*$`,
	)
	out = aso(t, q.flag, "status", q.failed.ID).wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^State:\s+failed$`, `(?m)^Reason:\s+TRANSFER ERROR: checksum mismatch`, `(?m)^Attempts:\s+1$`, `(?m)^Failed attempts:\s+1$`)
	out = aso(t, q.flag, "status", q.retried.ID).wantCode(t, 0).stdout
	// submitted once; the retry reset its failed attempts
	wantMatch(t, out, `(?m)^State:\s+new$`, `(?m)^Attempts:\s+1$`, `(?m)^Failed attempts:\s+0$`, `(?m)\s+failed\s+new\s+\S+:cli\s+retry requested$`)

	var doc state.Transfer
	r := aso(t, q.flag, "status", "--json", q.acquired.ID).wantCode(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	// enqueued, claimed, and the kill request, which keeps the state
	if doc.ID != q.acquired.ID || doc.State != state.StateAcquired || !doc.KillRequested || doc.Owner != "worker:42:test" || len(doc.History) != 3 ||
		doc.History[2].Reason != "kill requested" || doc.History[2].From != state.StateAcquired || doc.History[2].To != state.StateAcquired {
		t.Errorf("status --json ID: %+v", doc)
	}

	r = aso(t, q.flag, "status", unknownID).wantCode(t, 1)
	if !strings.Contains(r.stderr, "transfer "+unknownID+": not found") {
		t.Errorf("unknown ID: stderr %q", r.stderr)
	}
	r = aso(t, q.flag, "status", "deadbeef").wantCode(t, 1)
	if !strings.Contains(r.stderr, `transfer deadbeef: not found`) {
		t.Errorf("unknown ID prefix: stderr %q", r.stderr)
	}
	r = aso(t, q.flag, "status", "deadbee").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, `"deadbee": want at least 8`) {
		t.Errorf("malformed ID: stderr %q", r.stderr)
	}
}

// TestStatus_InvalidDocuments: a hand-edited document that is not a valid
// transfer is listed with its ID and the reason.
func TestStatus_InvalidDocuments(t *testing.T) {
	flag, path := stateFile(t)
	now := time.Now()
	good := state.NewTransfer(state.Request{User: "alice", Source: "T2_A", Destination: "T2_B", SourceLFN: "/g", DestinationLFN: "/g"}, now, "hand")
	bad := state.NewTransfer(state.Request{User: "alice", Source: "T2_A", Destination: "T2_B", SourceLFN: "/b", DestinationLFN: "/b"}, now, "hand")
	bad.State = "bogus"
	var file strings.Builder
	file.WriteString(`{"aso_memfile":1}` + "\n")
	for _, d := range []state.Transfer{good, bad} {
		d.Rev = "1-a"
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		file.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := aso(t, flag, "status", "--all-users").wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^Transfers of all users: 1$`,
		`(?m)^Invalid documents \(skipped by the agent\): 1$`,
		`(?m)^`+bad.ID+`\s+.*state "bogus": unknown state`)
	js := statusOf(t, flag, "--all-users")
	inv, _ := js["invalid"].([]any)
	if len(inv) != 1 || inv[0].(map[string]any)["id"] != bad.ID {
		t.Errorf("invalid %v, want %s", js["invalid"], bad.ID)
	}
}

// TestStatus_RetryTimeAndProgress shows the next retry of an aborted
// transfer, and the FTS progress of a submitted one.
func TestStatus_RetryTimeAndProgress(t *testing.T) {
	flag, path := stateFile(t)
	in := `{"user": "ann", "source": "T2_A", "destination": "T2_B", "source_lfn": "/1", "destination_lfn": "/1", "size": 1, "priority": 2}
{"user": "ann", "source": "T2_A", "destination": "T2_B", "source_lfn": "/2", "destination_lfn": "/2", "size": 1, "priority": 1}
`
	invocation{stdin: strings.NewReader(in)}.run(t, flag, "enqueue").wantCode(t, 0)
	agent := newPastAgent(t, path, "ann", 0)
	aborted := agent.claim()
	res, err := agent.st.AbortTransfers(t.Context(), []state.Abort{{Transfer: aborted, Reason: "no lfn-to-pfn rule for T2_A"}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("abort: %v %v", err, res)
	}
	active := agent.submit("job-9")
	res, err = agent.st.SetTransientState(t.Context(), []state.Transient{{Transfer: active,
		Progress: state.Progress{FTSState: "ACTIVE", Bytes: 1048576, Throughput: 2.5, Retries: 1, Reason: "TRANSFER timeout", Updated: state.At(time.Now())}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("progress: %v %v", err, res)
	}
	out := aso(t, flag, "status", aborted.ID).wantCode(t, 0).stdout
	// never submitted: the abort counts a failed attempt
	wantMatch(t, out, `(?m)^State:\s+new$`, `(?m)^Attempts:\s+0$`, `(?m)^Failed attempts:\s+1$`,
		`(?m)^Next retry:\s+not before 20\d\d-\d\d-\d\dT`,
		`(?m)^Reason:\s+no lfn-to-pfn rule for T2_A`,
		`(?m)^\S+\s+acquired\s+new\s+worker:42:test\s+no lfn-to-pfn rule for T2_A`)
	out = aso(t, flag, "status", active.ID).wantCode(t, 0).stdout
	wantMatch(t, out, `(?m)^Progress:\s+ACTIVE, 1048576 bytes, 2.50 MiB/s, 1 FTS retries, updated 20`,
		`(?m)^FTS reason:\s+TRANSFER timeout$`)
}
