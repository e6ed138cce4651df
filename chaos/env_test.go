package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// env is one scenario run: its World, proxies, seeded randomness and the
// faults and agent exits it saw.
type env struct {
	t       *testing.T
	w       *proctest.World
	backend backend
	size    size
	rng     *rand.Rand
	faults  *faults
	fts     *link
	ftsURL  string       // the FTS endpoint through the proxy
	couch   *link        // nil on memfile
	pki     *ftstest.PKI // X.509 credentials, when the scenario uses them
	// args are added to every agent's command line: the proxied --fts and
	// --state, and what the scenario needs.
	args []string

	mu         sync.Mutex
	exits      faults // agent exit codes, counted like faults
	violations []string
	lostJobs   map[string]bool // jobs the simulator was told to lose
	cur        *proctest.Proc  // the agent underFaults is running
	killed     map[string]bool // agents killed on purpose, by name
}

// violate records a broken invariant the scenario itself checks.
func (e *env) violate(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.violations = append(e.violations, fmt.Sprintf(format, args...))
}

func (e *env) exited(p *proctest.Proc) { e.exits.add(fmt.Sprintf("exit %d", p.Code()), 1) }

// kill sends SIGKILL to p and records its exit; the fault counts only if
// p was still running.
func (e *env) kill(p *proctest.Proc) {
	select {
	case <-p.Done():
	default:
		e.faults.add("sigkill", 1)
	}
	p.Kill()
	e.exited(p)
}

// intn is a seeded random integer in [lo, hi].
func (e *env) intn(lo, hi int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return lo + e.rng.IntN(hi-lo+1)
}

// between is a seeded random duration in [lo, hi].
func (e *env) between(lo, hi time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return lo + time.Duration(e.rng.Int64N(int64(hi-lo)+1))
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// agent starts `aso run` with the scenario's arguments and extra.
func (e *env) agent(extra ...string) *proctest.Proc {
	e.t.Helper()
	return e.w.StartAgent(user, append(append([]string(nil), e.args...), extra...)...)
}

// wait waits for p and records its exit; an exit other than 0 (done), 1 or
// 75 (an error the fault caused) or 3 (locked) is a violation, and so is a process
// ended by a signal the scenario did not send.
func (e *env) wait(p *proctest.Proc, d time.Duration) int {
	e.t.Helper()
	code := p.Wait(d)
	e.exited(p)
	e.mu.Lock()
	onPurpose := e.killed[p.Name]
	e.mu.Unlock()
	if code != 0 && code != 1 && code != 3 && code != 75 && !(onPurpose && p.Signaled()) {
		e.violate("%s exited %d\n%s", p.Name, code, p.Tail(30))
	}
	return code
}

// underFaults runs agents one after another, like cron, for the size's
// window while inject injects faults (inject must undo them when its ctx
// ends), and adds a wave of requests every quarter of the window. When the
// window ends, the running agent is stopped with SIGTERM after inject has
// returned.
func (e *env) underFaults(inject func(ctx context.Context), extra ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.size.window)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { inject(ctx) })
	wg.Go(func() {
		for sleep(ctx, e.size.window/4) {
			e.w.AddMix(user, e.size.wave)
		}
	})
	for ctx.Err() == nil {
		p := e.agent(extra...)
		e.mu.Lock()
		e.cur = p
		e.mu.Unlock()
		select {
		case <-p.Done():
			e.wait(p, time.Minute)
			sleep(ctx, 100*time.Millisecond)
		case <-ctx.Done():
			wg.Wait()
			if !started(p) {
				// a SIGTERM before the Go runtime has installed aso's
				// handler kills the process by default: that is no fault
				// of aso's, and nothing was done yet
				e.mu.Lock()
				if e.killed == nil {
					e.killed = map[string]bool{}
				}
				e.killed[p.Name] = true
				e.mu.Unlock()
			}
			p.Term()
			e.wait(p, time.Minute)
		}
	}
	wg.Wait()
}

// killCurrent sends SIGKILL to the agent underFaults is running, if one
// runs; underFaults records its exit.
func (e *env) killCurrent() {
	e.mu.Lock()
	p := e.cur
	if p != nil {
		if e.killed == nil {
			e.killed = map[string]bool{}
		}
		e.killed[p.Name] = true
	}
	e.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-p.Done():
		return
	default:
	}
	e.faults.add("sigkill", 1)
	p.Kill()
}

// checkReasons requires a reason on every failed or killed transfer, and
// returns those that failed because their last FTS job was lost.
func (e *env) checkReasons() map[string]bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := e.w.Store().List(ctx, state.Filter{States: []state.State{state.StateFailed, state.StateKilled}})
	if err != nil {
		e.t.Fatalf("list failed transfers: %v", err)
	}
	reasons := map[string]int{}
	lostLast := map[string]bool{}
	for _, t := range ts {
		lostLast[t.ID] = t.State == state.StateFailed && strings.Contains(t.Reason, " was lost (404")
		if strings.TrimSpace(t.Reason) == "" {
			e.violate("%s: %s without a reason", t.ID, t.State)
		}
		reasons[string(t.State)+": "+t.Reason]++
	}
	for r, n := range reasons {
		e.t.Logf("%d x %s", n, r)
	}
	return lostLast
}

// every calls fn after a seeded pause in [lo, hi], again and again until
// ctx ends.
func (e *env) every(ctx context.Context, lo, hi time.Duration, fn func()) {
	for sleep(ctx, e.between(lo, hi)) {
		fn()
	}
}

// excuseLostJobs drops the findings that only say that a transfer was
// submitted again while its file in a job the simulator lost was not
// terminal, or ended while that file was not: a lost job never runs
// again, and resubmitting (or failing) its transfers is the designed
// recovery. It also drops a destination copy left by a transfer that
// failed because its last job was lost (lostLast): aso cannot know who
// wrote that file, so it leaves it alone; and so is a file that was at the
// destination of a transfer killed before FTS ran it.
func excuseLostJobs(r proctest.Report, lost, lostLast map[string]bool) proctest.Report {
	var kept []string
	excused := map[string]bool{}
	blamed := map[string]bool{}
	for _, v := range r.Violations {
		id, _, _ := strings.Cut(v, ":")
		if id, _, _ := strings.Cut(id, " "); lostLast[id] && strings.Contains(v, "but a destination copy is left") {
			continue
		}
		if strings.Contains(v, `killed, but a destination copy is left ("stale partial copy")`) {
			// killed before FTS ran it: the file was there before, and
			// FTS (which copies atomically) did not write it; aso does
			// not delete what it cannot know to be its own
			continue
		}
		if job, ok := jobAfter(v, "while its file in job "); ok && lost[job] {
			excused[id] = true
			continue
		}
		if job, ok := jobAfter(v, "but its file in job "); ok && lost[job] && strings.Contains(v, " is still ") {
			r.Lost--
			continue
		}
		if strings.Contains(v, "submitted") || strings.Contains(v, "copied") || strings.Contains(v, "sid ") {
			blamed[id] = true
		}
		kept = append(kept, v)
	}
	for id := range excused {
		if !blamed[id] {
			r.Duplicated--
		}
	}
	r.Violations = kept
	return r
}

// jobAfter returns the job ID that follows prefix in a finding.
func jobAfter(v, prefix string) (string, bool) {
	_, rest, ok := strings.Cut(v, prefix)
	if !ok {
		return "", false
	}
	job, _, _ := strings.Cut(rest, " ")
	return job, true
}

// started reports whether the agent has logged anything yet, which it does
// only after its signal handlers are in place.
func started(p *proctest.Proc) bool {
	st, err := os.Stat(p.LogPath)
	return err == nil && st.Size() > 0
}
