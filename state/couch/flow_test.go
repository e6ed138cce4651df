package couch_test

import (
	"context"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/statetest"
)

func TestStore_Flow(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := open(t, newDB(t), c, "alice", "host:1:a", couch.Options{})
	enqueue(t, s, requests("alice", 5))
	got, err := statetest.Claim(ctx, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("claimed %d, want 3", len(got))
	}
	commits := make([]state.Commit, len(got))
	for i, tr := range got {
		commits[i] = state.Commit{Transfer: tr, SourcePFN: "file:///s", DestPFN: "file:///d", FileID: int64(i)}
	}
	res, err := statetest.Commit(ctx, s, commits, "job-1")
	mustOK(t, res, err)
	jobs, err := statetest.Active(ctx, s, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || len(jobs[0].Transfers) != 3 {
		t.Fatalf("jobs = %+v", jobs)
	}
	var outs []state.Terminal
	for _, tr := range jobs[0].Transfers {
		outs = append(outs, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: "job-1"})
	}
	res, err = s.SetTerminalState(ctx, outs)
	mustOK(t, res, err)
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.ByState[state.StateDone], 3; got != want {
		t.Fatalf("done = %d, want %d (%+v)", got, want, sum)
	}
}
