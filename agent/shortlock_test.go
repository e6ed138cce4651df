package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// slowActive is a store whose ActiveJobs takes d of real time, like a
// monitor phase on a busy database.
type slowActive struct {
	agent.Store
	d time.Duration
}

func (s slowActive) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	time.Sleep(s.d) // the slow phase, the test's subject: not a poll
	return s.Store.ActiveJobs(ctx, user)
}

// TestAgent_ShortLockTTLSurvivesLongPhases: with a run lock of 300 ms (real
// clock), a phase of 700 ms must not cost the lock: the keeper renews it
// during the phase. It used to renew at most once a second in the
// background, so the write fence found the lock expired and the agent
// stopped with ErrLockLost although nobody else had taken the user.
func TestAgent_ShortLockTTLSurvivesLongPhases(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	r, _ := w.request("short", 0, true)
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Now, cfg.Sleep = nil, nil // the real clock: the background renewal is what is tested
	cfg.Interval = 10 * time.Millisecond
	cfg.LockTTL = 300 * time.Millisecond
	cfg.Policy.LeaseTTL = 300 * time.Millisecond
	// a store on the real clock too
	st, err := memfile.Open(w.path, state.Config{Agent: state.Agent{User: testUser, Owner: cfg.Owner}, Policy: cfg.Policy})
	must(t, err)
	defer st.Close()
	a := w.agent(cfg, slowActive{st, 700 * time.Millisecond})
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := w.get(r.ID()); got.State != state.StateDone {
		t.Fatalf("transfer is %s (%q), want done", got.State, got.Reason)
	}
}
