// Package statetest is the conformance suite of the state.Store contract:
// every backend (state/couch, state/memfile) runs it with a one-line test and
// must pass it unchanged.
//
// The suite talks to a backend only through the state.Store interface, moves
// time with a fake Clock instead of sleeping, and expects a fresh, empty
// database for every subtest. It must not depend on any backend.
package statetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Factory opens another handle on the same fresh database, bound to cfg
// (agent identity, policy, clock). The suite closes every handle it opens.
type Factory func(t *testing.T, cfg state.Config) state.Store

// Clock is a fake clock for tests: safe for concurrent use, moved only by
// Advance and Set.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Start is the time every subtest's clock starts at.
var Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Policy is the policy of every store the suite opens.
var Policy = state.Policy{LeaseTTL: 10 * time.Minute, CoolOff: 5 * time.Minute, MaxAttempts: 3}

// The users, sites and job names the suite uses.
const (
	Alice = "alice"
	Bob   = "bob"
	Src   = "T2_US_Nebraska"
	Dst   = "T1_DE_KIT"
	Dst2  = "T2_CH_CERN"
)

type testCase struct {
	name string
	fn   func(e *env)
}

// Run runs the whole suite; newDB is called once per subtest and must return
// a Factory on a fresh, empty database.
func Run(t *testing.T, newDB func(t *testing.T) Factory) {
	var all []testCase
	for _, group := range [][]testCase{enqueueCases, claimCases, windowCases, leaseCases, commitCases, terminalCases, adminCases, lockCases, miscCases, multiCases, resultCases, linkCases, pagerCases, listCases, usersCases, recoveryCases, depCases, purgeCases, runLockCases, countsCases, ownerCases, ownerEnqueueCases} {
		all = append(all, group...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			c.fn(&env{t: t, open: newDB(t), clock: NewClock(Start)})
		})
	}
}

var ctx = context.Background()

// Req returns a valid request of user for file n on the link Src->Dst.
func Req(user string, n int) state.Request {
	return state.Request{
		User: user, Group: "cms", Source: Src, Destination: Dst,
		SourceLFN:      fmt.Sprintf("/store/temp/user/%s/out_%d.root", user, n),
		DestinationLFN: fmt.Sprintf("/store/user/%s/out_%d.root", user, n),
		Size:           int64(1000 + n), Checksums: map[string]string{"adler32": fmt.Sprintf("%08x", n)},
	}
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

func ids(ts []state.Transfer) []string {
	out := make([]string, len(ts))
	for i, tr := range ts {
		out[i] = tr.ID
	}
	return out
}

func commitsOf(ts []state.Transfer) []state.Commit {
	cs := make([]state.Commit, len(ts))
	for i, tr := range ts {
		cs[i] = state.Commit{Transfer: tr, SourcePFN: "file:///src" + tr.SourceLFN, DestPFN: "file:///dst" + tr.DestinationLFN, FileID: int64(i + 1)}
	}
	return cs
}

// ReqID is the transfer ID of Req(user, n).
func ReqID(user string, n int) string {
	r := Req(user, n)
	return r.ID()
}

// Claim is NewTransfers of up to limit transfers in queue order, for tests
// that want the transfers claimed only.
func Claim(ctx context.Context, s state.AgentStore, limit int) ([]state.Transfer, error) {
	c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: limit})
	return c.Transfers, err
}

// Prepare is PrepareSubmits of one job.
func Prepare(ctx context.Context, s state.AgentStore, ts []state.Transfer, sid string) ([]state.Result, error) {
	res, err := s.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: ts, SID: sid}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// Commit is SetTransferIDs of one job.
func Commit(ctx context.Context, s state.AgentStore, cs []state.Commit, job string) ([]state.Result, error) {
	res, err := s.SetTransferIDs(ctx, []state.CommitJob{{Commits: cs, JobID: job}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// Active lists every active job of user with its transfers: ActiveJobs,
// then ActiveTransfersOf all of them.
func Active(ctx context.Context, s state.AgentStore, user string) ([]state.Job, error) {
	refs, err := s.ActiveJobs(ctx, user)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	jobs := make([]string, len(refs))
	for i, r := range refs {
		jobs[i] = r.ID
	}
	return s.ActiveTransfersOf(ctx, user, jobs)
}
