package statetest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// env is the world of one subtest: a fresh database and a fake clock.
type env struct {
	t     *testing.T
	open  Factory
	clock *Clock
}

// store opens a handle for agent owner working on user's queue.
func (e *env) store(user, owner string) state.Store {
	e.t.Helper()
	s := e.open(e.t, state.Config{Agent: state.Agent{User: user, Owner: owner}, Policy: Policy, Now: e.clock.Now})
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

func (e *env) enqueue(s state.Store, reqs ...state.Request) []string {
	e.t.Helper()
	res, err := s.Enqueue(ctx, reqs)
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != len(reqs) {
		e.t.Fatalf("Enqueue returned %d results for %d requests", len(res), len(reqs))
	}
	ids := make([]string, len(res))
	for i, r := range res {
		if r.Status != state.Stored || r.Err != nil {
			e.t.Fatalf("Enqueue item %d: status %q, err %v; want stored", i, r.Status, r.Err)
		}
		ids[i] = r.ID
	}
	return ids
}

func (e *env) claim(s state.Store, limit int) []state.Transfer {
	e.t.Helper()
	c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: limit})
	if err != nil {
		e.t.Fatalf("NewTransfers(%d): %v", limit, err)
	}
	return c.Transfers
}

func (e *env) get(s state.Store, id string) state.Transfer {
	e.t.Helper()
	tr, err := s.Get(ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return tr
}

// ok fails unless the bulk call succeeded for every one of n items.
func (e *env) ok(call string, res []state.Result, err error, n int) []state.Result {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", call, err)
	}
	if len(res) != n {
		e.t.Fatalf("%s: %d results for %d items", call, len(res), n)
	}
	for i, r := range res {
		if r.Err != nil {
			e.t.Fatalf("%s item %d (%s): %v", call, i, r.ID, r.Err)
		}
		if r.Rev == "" {
			e.t.Fatalf("%s item %d (%s): success without a revision", call, i, r.ID)
		}
	}
	return res
}

func (e *env) wantState(s state.Store, id string, want state.State) state.Transfer {
	e.t.Helper()
	tr := e.get(s, id)
	if tr.State != want {
		e.t.Fatalf("transfer %s is %s (reason %q), want %s", id, tr.State, tr.Reason, want)
	}
	return tr
}

// unchanged fails if the stored document differs from before.
func (e *env) unchanged(s state.Store, before state.Transfer) {
	e.t.Helper()
	after := e.get(s, before.ID)
	if !reflect.DeepEqual(before, after) {
		e.t.Fatalf("transfer %s changed:\nbefore %+v\nafter  %+v", before.ID, before, after)
	}
}

// submit claims n transfers with s and commits them to job.
func (e *env) submit(s state.Store, n int, job string) []state.Transfer {
	e.t.Helper()
	ts := e.claim(s, n)
	if len(ts) != n {
		e.t.Fatalf("claimed %d transfers, want %d", len(ts), n)
	}
	res, err := Commit(ctx, s, commitsOf(ts), job)
	e.ok("SetTransferID", res, err, n)
	out := make([]state.Transfer, n)
	for i, tr := range ts {
		out[i] = e.wantState(s, tr.ID, state.StateSubmitted)
	}
	return out
}

// wantLast fails unless the last history entry of t is want, made by
// Operator now.
func (e *env) wantLast(t state.Transfer, want state.Transition) {
	e.t.Helper()
	want.At, want.By = state.At(e.clock.Now()), Operator
	if len(t.History) == 0 || !reflect.DeepEqual(t.History[len(t.History)-1], want) {
		e.t.Fatalf("history of %s: %+v; want it to end with %+v", t.ID, t.History, want)
	}
}

// countsWorld stores transfers of two users on two links in every state,
// failed with and without an error class, with reasons that the reason
// classes shorten, and one waiting to be retried.
func (e *env) countsWorld(s state.Store) {
	e.t.Helper()
	reqs := []state.Request{Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4), Req(Alice, 5), Req(Alice, 6), Req(Alice, 7), Req(Alice, 8)}
	e.enqueue(s, reqs...)
	abort := func(reason, class string, fatal bool) {
		ts := e.claim(s, 1)
		res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: reason, ErrorClass: class, Fatal: fatal}})
		e.ok("AbortTransfers", res, err, 1)
		e.clock.Advance(time.Minute)
	}
	abort(" \u00a0"+strings.Repeat("é", 99)+"xyz (detail)\u3000", "", true)
	abort("dependency "+ReqID(Bob, 9)+" is failed (after 1 attempt)", "source_missing", true)
	abort("TRANSFER [110] Connection timed out (after 3 attempts)", "timeout", false)
	sub := e.submit(s, 2, "job-1")
	e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: sub[0], Outcome: state.OutcomeDone, FTSJob: "job-1"},
		state.Terminal{Transfer: sub[1], Outcome: state.OutcomeFailed, ErrorClass: "checksum_mismatch", FTSJob: "job-1",
			Reason: "FTS job 6f3a1c2e-1b2c-5d4e-8f9a-0123456789ab: SOURCE [5] checksum (1 != 2)"}), nil, 2)
	e.clock.Advance(time.Minute)
	e.submit(s, 1, "job-2")
	b := e.store(Bob, "agent-b")
	r1, r2 := Req(Bob, 1), Req(Bob, 2)
	r1.Destination, r2.Destination = Dst2, Dst2
	e.enqueue(b, r1, r2)
	e.claim(b, 1)
}

func (e *env) counts(s state.Store, o state.CountsOptions) state.Counts {
	e.t.Helper()
	c, err := s.Counts(ctx, o)
	if err != nil {
		e.t.Fatalf("Counts(%+v): %v", o, err)
	}
	return c
}

// tallyOf counts the stored transfers of user ("" every user) as
// state.CountKeyOf groups them.
func (e *env) tallyOf(s state.Store, user string) []state.CountGroup {
	e.t.Helper()
	ts, err := s.List(ctx, state.Filter{User: user})
	if err != nil {
		e.t.Fatalf("List: %v", err)
	}
	tally := state.NewTally(state.CountsOptions{})
	for i := range ts {
		tally.Add(state.CountKeyOf(&ts[i]), 1, ts[i].LastUpdate.Time)
	}
	return tally.Counts().Groups
}

func (e *env) wantGroups(got, want []state.CountGroup) {
	e.t.Helper()
	if len(want) < 2 {
		e.t.Fatalf("the stored transfers make %d groups: the test needs more", len(want))
	}
	for i := range got {
		got[i].Oldest = got[i].Oldest.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("groups:\n got %+v\nwant %+v", got, want)
	}
}

// checkPager checks that ActiveJobs lists the jobs of user, which must be
// want in order, with their numbers of transfers, and that
// ActiveTransfersOf gives the same jobs asked one at a time, all at once
// and in reverse order; it returns them.
func (e *env) checkPager(s state.Store, p state.AgentStore, user string, want ...string) []state.Job {
	e.t.Helper()
	all, err := Active(ctx, s, user)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, j := range all {
		names = append(names, j.ID)
	}
	if !slices.Equal(names, want) {
		e.t.Fatalf("the active jobs of %s are %v, want %v", user, names, want)
	}
	refs, err := p.ActiveJobs(ctx, user)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(refs) != len(all) {
		e.t.Fatalf("ActiveJobs(%s) = %+v; ActiveTransfersOf gives jobs %v", user, refs, names)
	}
	for i, r := range refs {
		if r.ID != all[i].ID || r.Transfers != len(all[i].Transfers) {
			e.t.Fatalf("ActiveJobs(%s)[%d] = %+v; ActiveTransfersOf gives %s with %d transfers", user, i, r, all[i].ID, len(all[i].Transfers))
		}
	}
	// one job at a time, then all of them in reverse order
	for _, j := range all {
		got, err := p.ActiveTransfersOf(ctx, user, []string{j.ID})
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], j) {
			e.t.Fatalf("ActiveTransfersOf(%s, %s) = %+v, %v; want %+v", user, j.ID, got, err, j)
		}
	}
	rev := slices.Clone(names)
	slices.Reverse(rev)
	got, err := p.ActiveTransfersOf(ctx, user, rev)
	if err != nil || len(got) != len(all) {
		e.t.Fatalf("ActiveTransfersOf(%s, %v): %d jobs, %v", user, rev, len(got), err)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], all[len(all)-1-i]) {
			e.t.Fatalf("ActiveTransfersOf(%s, %v)[%d] = %+v; want %+v", user, rev, i, got[i], all[len(all)-1-i])
		}
	}
	return all
}

// finish submits the transfers s claims (n of them) and ends them with outcome.
func (e *env) finish(s state.Store, n int, job string, outcome state.Outcome) []string {
	e.t.Helper()
	ts := e.submit(s, n, job)
	outs := make([]state.Terminal, len(ts))
	for i, t := range ts {
		outs[i] = state.Terminal{Transfer: t, Outcome: outcome, FTSJob: job}
	}
	e.ok("SetTerminalState", e.terminal(s, outs...), nil, n)
	return ids(ts)
}

// current reads ts again (their revisions move with every write).
func (e *env) current(s state.Store, ts []state.Transfer) []state.Transfer {
	e.t.Helper()
	out := make([]state.Transfer, len(ts))
	for i := range ts {
		out[i] = e.get(s, ts[i].ID)
	}
	return out
}

// wrote fails unless every result reports want and lease (zero: none), and
// the stored transfer agrees with its result.
func (e *env) wrote(s state.Store, call string, res []state.Result, want state.State, lease time.Time) {
	e.t.Helper()
	for _, r := range res {
		tr := e.get(s, r.ID)
		if r.State != want || !r.LeaseExpires.Equal(lease) {
			e.t.Fatalf("%s %s: result says %q, lease %v; want %q, lease %v", call, r.ID, r.State, r.LeaseExpires.Time, want, lease)
		}
		if tr.State != r.State || !tr.LeaseExpires.Equal(r.LeaseExpires.Time) || tr.Rev != r.Rev {
			e.t.Fatalf("%s %s: result says %q, lease %v, rev %s; stored %q, lease %v, rev %s", call, r.ID, r.State, r.LeaseExpires.Time, r.Rev, tr.State, tr.LeaseExpires.Time, tr.Rev)
		}
	}
}

// lockOf returns the stored lock of user, read by a fresh handle (so that
// a file store decodes it from the file).
func (e *env) lockOf(_ state.Store, user string) state.LockDoc {
	e.t.Helper()
	ls, err := e.store(user, "reader").Locks(ctx, user)
	if err != nil || len(ls) != 1 || ls[0].User != user {
		e.t.Fatalf("Locks(%s): %+v, %v", user, ls, err)
	}
	return ls[0]
}

func (e *env) terminal(s state.Store, outs ...state.Terminal) []state.Result {
	e.t.Helper()
	res, err := s.SetTerminalState(ctx, outs)
	if err != nil {
		e.t.Fatalf("SetTerminalState: %v", err)
	}
	if len(res) != len(outs) {
		e.t.Fatalf("SetTerminalState: %d results for %d items", len(res), len(outs))
	}
	return res
}

// checkDue fails unless DueUsers at the clock's time gives want.
func (e *env) checkDue(l state.Admin, want []state.UserDue) {
	e.t.Helper()
	got, err := l.DueUsers(ctx, e.clock.Now())
	if err != nil {
		e.t.Fatalf("DueUsers: %v", err)
	}
	for _, us := range [][]state.UserDue{got, want} {
		for i := range us {
			us[i].Since = us[i].Since.UTC()
			if !us[i].LockedUntil.IsZero() {
				us[i].LockedUntil = us[i].LockedUntil.UTC()
			}
		}
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		e.t.Fatalf("DueUsers at %s:\n got %+v\nwant %+v", e.clock.Now().Format(time.RFC3339), got, want)
	}
}

// enqueueEach enqueues the requests from..to-1 of Alice at priority prio,
// one clock second apart, and returns their IDs in queue order.
func (e *env) enqueueEach(s state.Store, from, to, prio int) []string {
	e.t.Helper()
	var out []string
	for i := from; i < to; i++ {
		r := Req(Alice, i)
		r.Priority = prio
		out = append(out, e.enqueue(s, r)[0])
		e.clock.Advance(time.Second)
	}
	return out
}

// userWork returns UserWork of user at the clock's time.
func (e *env) userWork(l state.Admin, user string) state.UserWork {
	e.t.Helper()
	w, err := l.UserWork(ctx, user, e.clock.Now())
	if err != nil {
		e.t.Fatalf("UserWork %s: %v", user, err)
	}
	return w
}

// sameCounts reports whether got and want count the same (zero counts
// aside).
func sameCounts(got, want map[state.State]int) bool {
	for _, st := range state.States {
		if got[st] != want[st] {
			return false
		}
	}
	return true
}

// coolingOff enqueues user's request n, claims it and aborts the claim:
// the transfer is back in new, waiting for its cool-off. It returns the
// transfer as claimed.
func (e *env) coolingOff(s state.Store, user string, n int) state.Transfer {
	e.t.Helper()
	e.enqueue(s, Req(user, n))
	ts := e.claim(s, 1)
	res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "no route"}})
	e.ok("AbortTransfers", res, err, 1)
	return ts[0]
}
