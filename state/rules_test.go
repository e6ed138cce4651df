package state_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

var (
	t0    = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	agent = state.Agent{User: "alice", Owner: "host:1:abc"}
	other = state.Agent{User: "alice", Owner: "host:2:def"}
	pol   = state.Policy{LeaseTTL: 10 * time.Minute, CoolOff: 5 * time.Minute, MaxAttempts: 3, DependencyWait: time.Hour}
)

func newT() state.Transfer { return state.NewTransfer(validRequest(), t0, "cli") }

func claimed(t *testing.T) state.Transfer {
	t.Helper()
	tr := newT()
	if err := state.Claim(&tr, agent, t0, pol.LeaseTTL); err != nil {
		t.Fatal(err)
	}
	return tr
}

func submitted(t *testing.T) state.Transfer {
	t.Helper()
	tr := claimed(t)
	if err := state.CommitTo(&tr, agent, state.Commit{DestPFN: "davs://x/y", SourcePFN: "davs://a/b", FileID: 7}, "job-1", t0); err != nil {
		t.Fatal(err)
	}
	return tr
}

// lastAttempt is a submitted transfer on its last allowed attempt.
func lastAttempt(t *testing.T) state.Transfer {
	t.Helper()
	tr := submitted(t)
	tr.Attempts = pol.MaxAttempts - 1
	return tr
}

func TestClaimable(t *testing.T) {
	later := newT()
	later.RetryAfter = state.At(t0.Add(time.Minute))
	acq := claimed(t)
	sub := submitted(t)
	cases := []struct {
		name string
		tr   state.Transfer
		user string
		at   time.Time
		want bool
	}{
		{"new", newT(), "alice", t0, true},
		{"other user", newT(), "bob", t0, false},
		{"retry_after ahead", later, "alice", t0, false},
		{"retry_after reached", later, "alice", t0.Add(time.Minute), true},
		{"live lease", acq, "alice", t0.Add(pol.LeaseTTL - time.Second), false},
		{"expired lease", acq, "alice", t0.Add(pol.LeaseTTL), true},
		{"submitted", sub, "alice", t0.Add(time.Hour), false},
	}
	for _, c := range cases {
		if got := state.Claimable(&c.tr, c.user, c.at); got != c.want {
			t.Errorf("%s: Claimable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestClaim(t *testing.T) {
	tr := claimed(t)
	if tr.State != state.StateAcquired || tr.Owner != agent.Owner || !tr.LeaseExpires.Equal(t0.Add(pol.LeaseTTL)) {
		t.Fatalf("claimed %+v", tr)
	}
	if err := state.Claim(&tr, other, t0.Add(time.Minute), pol.LeaseTTL); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("claim under a live lease: %v", err)
	}
	tr.SubmitSID = "sid-1"
	if err := state.Claim(&tr, other, t0.Add(pol.LeaseTTL), pol.LeaseTTL); err != nil {
		t.Fatal(err)
	}
	last := tr.History[len(tr.History)-1]
	if tr.Owner != other.Owner || last.By != other.Owner || !strings.Contains(last.Reason, agent.Owner) {
		t.Fatalf("take-over %+v, last history %+v", tr, last)
	}
	if tr.SubmitSID != "sid-1" {
		t.Fatal("a take-over dropped submit_sid: the next agent could not adopt the FTS job")
	}
}

// graphOf is the dependency graph of the given states (no further
// dependencies).
func graphOf(states map[string]state.State) state.DepGraph {
	g := state.DepGraph{}
	for id, st := range states {
		g[id] = state.DepNode{State: st}
	}
	return g
}

func TestCheckDepsAndSettle(t *testing.T) {
	a, b := strings.Repeat("0a", 32), strings.Repeat("0b", 32)
	tr := newT()
	tr.DependsOn = []string{a, b}
	cases := []struct {
		states map[string]state.State
		want   state.DepVerdict
		dep    string
	}{
		{map[string]state.State{a: state.StateDone, b: state.StateDone}, state.DepsReady, ""},
		{map[string]state.State{a: state.StateDone}, state.DepsWaiting, ""},
		{map[string]state.State{a: state.StateDone, b: state.StateSubmitted}, state.DepsWaiting, ""},
		{map[string]state.State{a: state.StateNew, b: state.StateKilled}, state.DepsFailed, b},
		{map[string]state.State{a: state.StateFailed}, state.DepsFailed, a},
	}
	for i, c := range cases {
		d := graphOf(c.states).Deps(0)
		v, reason := state.CheckDeps(&tr, d, t0)
		if v != c.want || !strings.Contains(reason, c.dep) {
			t.Errorf("case %d: verdict %v reason %q, want %v naming %q", i, v, reason, c.want, c.dep)
		}
		cp := tr
		settled := state.SettleUnrunnable(&cp, d, t0, "agent")
		if settled != (c.want == state.DepsFailed) {
			t.Errorf("case %d: settled %v", i, settled)
		}
		if settled && (cp.State != state.StateFailed || !strings.Contains(cp.Reason, c.dep)) {
			t.Errorf("case %d: settled as %s (%q), want failed naming %s", i, cp.State, cp.Reason, c.dep)
		}
	}
	if v, _ := state.CheckDeps(&state.Transfer{}, state.DepGraph{}.Deps(0), t0); v != state.DepsReady {
		t.Error("no dependencies is not ready")
	}
	k := claimed(t)
	k.KillRequested = true
	if !state.SettleUnrunnable(&k, state.DepGraph{}.Deps(0), t0, "agent") || k.State != state.StateKilled || k.Owner != "" {
		t.Fatalf("kill_requested settled as %+v", k)
	}
}

// TestCheckDepsCycle: a transfer in a cycle of dependencies fails at once
// naming the cycle; one that only depends on a cycle waits (its dependency
// fails, then it does); a cycle broken by a terminal member is no cycle.
func TestCheckDepsCycle(t *testing.T) {
	x, y, z := strings.Repeat("1a", 32), strings.Repeat("1b", 32), strings.Repeat("1c", 32)
	tr := newT()
	tr.DependsOn = []string{x}
	g := state.DepGraph{
		x: {State: state.StateNew, DependsOn: []string{y}},
		y: {State: state.StateNew, DependsOn: []string{tr.ID, z}},
		z: {State: state.StateNew},
	}
	v, reason := state.CheckDeps(&tr, g.Deps(0), t0)
	want := "dependency cycle: " + tr.ID + " -> " + x + " -> " + y + " -> " + tr.ID
	if v != state.DepsFailed || reason != want {
		t.Fatalf("cycle: %v %q, want failed %q", v, reason, want)
	}
	outside := newT()
	outside.ID = strings.Repeat("2f", 32)
	outside.DependsOn = []string{x}
	if v, r := state.CheckDeps(&outside, g.Deps(0), t0); v != state.DepsWaiting {
		t.Errorf("a dependent of a cycle outside it: %v %q, want waiting", v, r)
	}
	g[y] = state.DepNode{State: state.StateFailed, DependsOn: []string{tr.ID}}
	if v, r := state.CheckDeps(&tr, g.Deps(0), t0); v != state.DepsWaiting {
		t.Errorf("cycle through a terminal transfer: %v %q, want waiting (its dependency fails on its own)", v, r)
	}
	self := newT()
	self.DependsOn = []string{self.ID}
	if v, r := state.CheckDeps(&self, state.DepGraph{self.ID: {State: state.StateNew, DependsOn: self.DependsOn}}.Deps(0), t0); v != state.DepsFailed || !strings.Contains(r, "cycle") {
		t.Errorf("a transfer depending on itself: %v %q", v, r)
	}
}

// TestCheckDepsUnknown: an unknown dependency is waited for until the wait
// has passed since the transfer's creation, then fails naming it.
func TestCheckDepsUnknown(t *testing.T) {
	u := strings.Repeat("3d", 32)
	tr := newT()
	tr.Created = state.At(t0)
	tr.DependsOn = []string{u}
	d := state.DepGraph{}.Deps(time.Hour)
	if v, _ := state.CheckDeps(&tr, d, t0.Add(time.Hour-time.Second)); v != state.DepsWaiting {
		t.Errorf("within the wait: %v, want waiting", v)
	}
	v, reason := state.CheckDeps(&tr, d, t0.Add(time.Hour))
	if v != state.DepsFailed || !strings.Contains(reason, u) || !strings.Contains(reason, "unknown") {
		t.Errorf("after the wait: %v %q, want failed naming the unknown dependency", v, reason)
	}
	if v, _ := state.CheckDeps(&tr, state.DepGraph{}.Deps(0), t0.Add(state.DefaultDependencyWait-time.Minute)); v != state.DepsWaiting {
		t.Errorf("the default wait is shorter than %s", state.DefaultDependencyWait)
	}
}

func TestLeaseRules(t *testing.T) {
	tr := claimed(t)
	if err := state.Held(&tr, agent); err != nil {
		t.Fatal(err)
	}
	if err := state.Held(&tr, other); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Held by another agent: %v", err)
	}
	at := t0.Add(3 * time.Minute)
	if err := state.Prepare(&tr, agent, "sid-9", at, pol.LeaseTTL); err != nil || tr.SubmitSID != "sid-9" || !tr.LeaseExpires.Equal(at.Add(pol.LeaseTTL)) {
		t.Fatalf("Prepare: %v %+v", err, tr)
	}
	if err := state.Renew(&tr, other, at, pol.LeaseTTL); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("Renew by another agent: %v", err)
	}
	if err := state.CommitTo(&tr, agent, state.Commit{DestPFN: "d", FileID: 3}, "job-9", at); err != nil {
		t.Fatal(err)
	}
	if tr.State != state.StateSubmitted || tr.FTSJob != "job-9" || tr.FTSFileID != 3 || !tr.LeaseExpires.IsZero() || tr.Progress == nil {
		t.Fatalf("committed %+v", tr)
	}
	if err := state.CommitTo(&tr, agent, state.Commit{}, "job-10", at); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("second commit: %v", err)
	}
	if err := state.ApplyTransient(&tr, state.Progress{FTSState: "ACTIVE", Bytes: 9}, at.Add(time.Minute)); err != nil || tr.Progress.Bytes != 9 || !tr.LastUpdate.Equal(at.Add(time.Minute)) {
		t.Fatalf("ApplyTransient: %v %+v", err, tr.Progress)
	}
	fresh := newT()
	if err := state.ApplyTransient(&fresh, state.Progress{}, at); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("ApplyTransient on a new transfer: %v", err)
	}
}

func TestApplyAbort(t *testing.T) {
	tr := claimed(t)
	for i := 1; i < pol.MaxAttempts; i++ {
		if err := state.ApplyAbort(&tr, agent, state.Abort{Reason: "no pfn"}, pol, t0); err != nil {
			t.Fatal(err)
		}
		if tr.State != state.StateNew || tr.Attempts != i || !tr.RetryAfter.Equal(t0.Add(pol.CoolOff)) || tr.Owner != "" || tr.Reason != "no pfn" {
			t.Fatalf("abort %d: %+v", i, tr)
		}
		if err := state.Claim(&tr, agent, t0.Add(pol.CoolOff), pol.LeaseTTL); err != nil {
			t.Fatal(err)
		}
	}
	if err := state.ApplyAbort(&tr, agent, state.Abort{Reason: "no pfn"}, pol, t0); err != nil || tr.State != state.StateFailed || !strings.Contains(tr.Reason, "no pfn") {
		t.Fatalf("last abort: %v %+v", err, tr)
	}
	f := claimed(t)
	if err := state.ApplyAbort(&f, agent, state.Abort{Reason: "permission denied", Fatal: true}, pol, t0); err != nil || f.State != state.StateFailed || f.Attempts != 1 || f.Reason != "permission denied" {
		t.Fatalf("fatal abort: %v %+v", err, f)
	}
	c := claimed(t)
	if err := state.ApplyAbort(&c, agent, state.Abort{Reason: "FTS refused the submission", Fatal: true, ErrorClass: "unsupported"}, pol, t0); err != nil || c.State != state.StateFailed || c.ErrorClass != "unsupported" {
		t.Fatalf("fatal abort with a class: %v %+v", err, c)
	}
	if tr.ErrorClass != "" || f.ErrorClass != "" {
		t.Fatalf("aborts without a class stored %q and %q", tr.ErrorClass, f.ErrorClass)
	}
	n := claimed(t)
	n.SubmitSID = "sid"
	if err := state.ApplyAbort(&n, agent, state.Abort{Reason: "shutdown", NoPenalty: true}, pol, t0); err != nil || n.State != state.StateNew || n.Attempts != 0 || !n.RetryAfter.IsZero() || n.SubmitSID != "" {
		t.Fatalf("abort without penalty: %v %+v", err, n)
	}
	if err := state.ApplyAbort(&n, agent, state.Abort{}, pol, t0); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("abort of a transfer not held: %v", err)
	}
}

func TestApplyTerminal(t *testing.T) {
	job := func(o state.Outcome) state.Terminal { return state.Terminal{Outcome: o, FTSJob: "job-1", Reason: "r"} }
	cases := []struct {
		name     string
		start    func(t *testing.T) state.Transfer
		out      state.Terminal
		want     state.State
		attempts int
		err      error
	}{
		{"done", submitted, job(state.OutcomeDone), state.StateDone, 0, nil},
		{"killed", submitted, job(state.OutcomeKilled), state.StateKilled, 0, nil},
		{"fatal failure", submitted, job(state.OutcomeFailed), state.StateFailed, 1, nil},
		{"retryable failure", submitted, state.Terminal{Outcome: state.OutcomeFailed, Retryable: true, FTSJob: "job-1"}, state.StateNew, 1, nil},
		{"lost", submitted, job(state.OutcomeLost), state.StateNew, 1, nil},
		{"lost, attempts exhausted", lastAttempt, job(state.OutcomeLost), state.StateFailed, pol.MaxAttempts, nil},
		{"lost with its FTS, no penalty", submitted, state.Terminal{Outcome: state.OutcomeLost, NoPenalty: true, FTSJob: "job-1"}, state.StateNew, 0, nil},
		{"lost with its FTS at the last attempt", lastAttempt, state.Terminal{Outcome: state.OutcomeLost, NoPenalty: true, FTSJob: "job-1"}, state.StateNew, pol.MaxAttempts - 1, nil},
		{"other job", submitted, state.Terminal{Outcome: state.OutcomeDone, FTSJob: "job-2"}, state.StateSubmitted, 0, state.ErrLeaseLost},
		{"kill of a held transfer", claimed, state.Terminal{Outcome: state.OutcomeKilled}, state.StateKilled, 0, nil},
		{"job outcome for an acquired one", claimed, job(state.OutcomeDone), state.StateAcquired, 0, state.ErrLeaseLost},
		{"unknown outcome", submitted, state.Terminal{Outcome: "maybe", FTSJob: "job-1"}, state.StateSubmitted, 0, state.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := c.start(t)
			write, err := state.ApplyTerminal(&tr, agent, c.out, pol, t0.Add(time.Hour))
			if !errors.Is(err, c.err) || (err != nil) == write {
				t.Fatalf("ApplyTerminal: write %v err %v, want err %v", write, err, c.err)
			}
			if tr.State != c.want || tr.Attempts != c.attempts {
				t.Fatalf("state %s attempts %d, want %s %d", tr.State, tr.Attempts, c.want, c.attempts)
			}
			if err == nil && tr.State == state.StateNew && tr.FTSJob != "" {
				t.Fatalf("back to new still in job %s", tr.FTSJob)
			}
			if err == nil && tr.State.Terminal() && tr.Progress != nil {
				t.Fatalf("terminal transfer keeps progress %+v", tr.Progress)
			}
		})
	}
	tr := submitted(t)
	tr.Attempts = pol.MaxAttempts - 1
	if _, err := state.ApplyTerminal(&tr, agent, state.Terminal{Outcome: state.OutcomeFailed, Retryable: true, Reason: "timeout", FTSJob: "job-1"}, pol, t0); err != nil || tr.State != state.StateFailed {
		t.Fatalf("retryable failure at the last attempt: %v %s", err, tr.State)
	}
	done := submitted(t)
	if _, err := state.ApplyTerminal(&done, agent, job(state.OutcomeDone), pol, t0); err != nil {
		t.Fatal(err)
	}
	if write, err := state.ApplyTerminal(&done, agent, job(state.OutcomeDone), pol, t0); write || err != nil {
		t.Fatalf("repeated outcome: write %v err %v, want no write and no error", write, err)
	}
	if _, err := state.ApplyTerminal(&done, agent, job(state.OutcomeFailed), pol, t0); !errors.Is(err, state.ErrLeaseLost) || done.State != state.StateDone {
		t.Fatalf("another outcome for a done transfer: %v, %s", err, done.State)
	}
}

func TestAdminRules(t *testing.T) {
	n := newT()
	if err := state.RequestKillOf(&n, t0, "cli"); err != nil || n.State != state.StateKilled {
		t.Fatalf("kill of a new transfer: %v %s", err, n.State)
	}
	if err := state.RequestKillOf(&n, t0, "cli"); !errors.Is(err, state.ErrTerminal) {
		t.Fatalf("kill of a killed transfer: %v", err)
	}
	s := submitted(t)
	reason := s.Reason
	if err := state.RequestKillOf(&s, t0, "cli"); err != nil || s.State != state.StateSubmitted || !s.KillRequested {
		t.Fatalf("kill of a submitted transfer: %v %+v", err, s)
	}
	want := state.Transition{At: state.At(t0), From: state.StateSubmitted, To: state.StateSubmitted, By: "cli", Reason: state.KillRequestedReason}
	if last := s.History[len(s.History)-1]; last != want || s.Reason != reason {
		t.Fatalf("kill request of a submitted transfer: last history entry %+v, reason %q; want %+v, the reason kept", last, s.Reason, want)
	}
	if err := state.RetryOf(&s, t0, "cli"); !errors.Is(err, state.ErrNotTerminal) {
		t.Fatalf("retry of an active transfer: %v", err)
	}
	if err := state.RetryOf(&n, t0, "cli"); err != nil || n.State != state.StateNew || n.KillRequested || n.Attempts != 0 || n.FTSJob != "" {
		t.Fatalf("retry: %v %+v", err, n)
	}
	if !state.Claimable(&n, "alice", t0) {
		t.Fatal("a retried transfer is not claimable")
	}
}

func TestPolicyAndConfig(t *testing.T) {
	p := state.Policy{}.WithDefaults()
	if p.LeaseTTL != state.DefaultLeaseTTL || p.CoolOff != state.DefaultCoolOff || p.MaxAttempts != state.DefaultMaxAttempts || p.DependencyWait != state.DefaultDependencyWait {
		t.Fatalf("defaults %+v", p)
	}
	if q := pol.WithDefaults(); q != pol {
		t.Fatalf("WithDefaults changed a full policy: %+v", q)
	}
	if (state.Config{}).Clock()().IsZero() {
		t.Fatal("default clock")
	}
	if got := (state.Config{Now: func() time.Time { return t0 }}).Clock()(); !got.Equal(t0) {
		t.Fatalf("injected clock gave %v", got)
	}
	le := &state.LockedError{User: "alice", Holder: "h:1:x", Expire: "2026"}
	if !errors.Is(le, state.ErrLocked) || !strings.Contains(le.Error(), "h:1:x") {
		t.Fatalf("LockedError %v", le)
	}
}
