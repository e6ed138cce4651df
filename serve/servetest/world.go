// Package servetest builds the stores that aso serve's tests and its
// benchmark look at: many transfers of several users on several links, in
// every state, failed with every common error class, built in a few bulk
// calls of the store (enqueue, then the agent's own calls: claims,
// commits and outcomes) rather than by running agents.
package servetest

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Users and Links of a world.
var (
	Users = []string{"alice", "bob", "carol", "dave", "erin"}
	Links = [][2]string{{"T2_US_Nebraska", "T1_DE_KIT"}, {"T2_CH_CERN", "T1_US_FNAL"}, {"T2_IT_Pisa", "T2_DE_DESY"}}
)

// failures are the final failures of a world, by error class, as FTS
// words them.
var failures = []struct{ class, reason string }{
	{"source_missing", "SOURCE [2] Result HTTP 404 : File not found  after 1 attempts"},
	{"no_space", "DESTINATION [28] No space left on device"},
	{"checksum_mismatch", "SOURCE [5] Source and user-defined ADLER32 checksum do not match (81936592 != 8193656d)"},
	{"destination_permission", "DESTINATION [13] HTTP 403 : Permission refused"},
	{"", "the sites file has no rule for this LFN"},
}

// Fill stores perUser transfers of each of Users through open (a handle
// bound to the user, whose clock is clock), moving the clock from start by
// an hour at each batch so that the finished transfers spread over the
// hours since start, and leaving a run record in each user's lock (see
// lockRun). Of every 20 transfers of a user: 11 end done, 4
// failed (one per class above, rotating), 1 waits to be retried after a
// timeout, 2 stay submitted in FTS, 1 stays acquired and 1 stays new.
func Fill(ctx context.Context, open func(user string) (state.Store, error), perUser int, clock *Clock) error {
	for _, u := range Users {
		st, err := open(u)
		if err != nil {
			return err
		}
		err = fillUser(ctx, st, u, perUser, clock)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("servetest: fill %s: %w", u, err)
		}
	}
	return nil
}

// Clock is a settable clock for the stores Fill writes through.
type Clock struct{ T time.Time }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.T }

func fillUser(ctx context.Context, st state.Store, user string, n int, clock *Clock) error {
	reqs := make([]state.Request, n)
	for i := range reqs {
		l := Links[i%len(Links)]
		reqs[i] = state.Request{User: user, Group: "cms", Source: l[0], Destination: l[1],
			SourceLFN:      fmt.Sprintf("/store/temp/user/%s/run%d/out_%06d.root", user, i/1000, i),
			DestinationLFN: fmt.Sprintf("/store/user/%s/run%d/out_%06d.root", user, i/1000, i),
			Size:           int64(1_000_000 + i), Checksums: map[string]string{"adler32": fmt.Sprintf("%08x", i)}}
	}
	for from := 0; from < n; from += 2000 {
		res, err := st.Enqueue(ctx, reqs[from:min(n, from+2000)])
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Status != state.Stored {
				return fmt.Errorf("enqueue %s: %s %v", r.ID, r.Status, r.Err)
			}
		}
	}
	submit := n * 18 / 20
	for batch := 0; submit > 0; batch++ {
		k := min(submit, 1000)
		if err := finishBatch(ctx, st, k, fmt.Sprintf("%s-job-%d", user, batch)); err != nil {
			return err
		}
		submit -= k
		clock.T = clock.T.Add(time.Hour)
	}
	if _, err := st.NewTransfers(ctx, state.ClaimRequest{Limit: n / 20}); err != nil { // acquired, and left so
		return err
	}
	return lockRun(ctx, st, user, clock)
}

// lockRun leaves a run record in user's lock: dave's agent still holds
// it, erin's last run exited 78 (needs a person), the others' 0.
func lockRun(ctx context.Context, st state.Store, user string, clock *Clock) error {
	l, err := st.AcquireLock(ctx, user, "fillhost:4242:"+user, 100*time.Hour)
	if err != nil || user == "dave" {
		return err
	}
	code := 0
	if user == "erin" {
		code = 78
	}
	return st.ReleaseLock(ctx, l, &state.RunRecord{Holder: l.Holder, Started: state.At(l.Since), Ended: state.At(clock.T), ExitCode: code})
}

// finishBatch claims k transfers, commits them to job and records their
// outcomes by the proportions of Fill.
func finishBatch(ctx context.Context, st state.Store, k int, job string) error {
	claimed, err := st.NewTransfers(ctx, state.ClaimRequest{Limit: k})
	if err != nil {
		return err
	}
	ts := claimed.Transfers
	commits := make([]state.Commit, len(ts))
	for i, t := range ts {
		commits[i] = state.Commit{Transfer: t, SourcePFN: "davs://src.example" + t.SourceLFN, DestPFN: "davs://dst.example" + t.DestinationLFN, FileID: int64(i + 1)}
	}
	res, err := st.SetTransferIDs(ctx, []state.CommitJob{{Commits: commits, JobID: job}})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("commit of job %s: %d results", job, len(res))
	}
	if err != nil {
		return err
	}
	if err := check(res[0], nil); err != nil {
		return err
	}
	var outs []state.Terminal
	for i, t := range ts {
		t.State = state.StateSubmitted
		switch r := i % 18; {
		case r < 11:
			outs = append(outs, state.Terminal{Transfer: t, Outcome: state.OutcomeDone, FTSJob: job})
		case r < 15:
			f := failures[(i/18+r)%len(failures)]
			outs = append(outs, state.Terminal{Transfer: t, Outcome: state.OutcomeFailed, FTSJob: job, Reason: f.reason, ErrorClass: f.class})
		case r == 15:
			outs = append(outs, state.Terminal{Transfer: t, Outcome: state.OutcomeFailed, Retryable: true, FTSJob: job,
				Reason: "TRANSFER [110] Connection timed out (after 1 attempts)", ErrorClass: "timeout"})
		}
	}
	return check(st.SetTerminalState(ctx, withRevs(ctx, st, outs)))
}

// withRevs gives each outcome its transfer as stored now (the commit moved
// its revision on).
func withRevs(ctx context.Context, st state.Store, outs []state.Terminal) []state.Terminal {
	ids := make([]string, len(outs))
	for i := range outs {
		ids[i] = outs[i].Transfer.ID
	}
	cur, err := st.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return outs
	}
	byID := map[string]state.Transfer{}
	for _, t := range cur {
		byID[t.ID] = t
	}
	for i := range outs {
		outs[i].Transfer = byID[outs[i].Transfer.ID]
	}
	return outs
}

func check(res []state.Result, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("%s: %w", r.ID, r.Err)
		}
	}
	return nil
}
