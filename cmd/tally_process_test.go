package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// counts are a run's numbers by name: claimed, settled, submitted, jobs,
// done, failed, retried, lost, killed, released, moved, deleted,
// already_gone.
type counts map[string]int

var countNames = []string{"claimed", "settled", "submitted", "jobs", "done", "failed", "retried", "lost", "killed", "released", "moved", "deleted", "already_gone"}

// fromFields reads the counts named in keys (count name: field name) from
// a decoded JSON object.
func fromFields(m map[string]any, keys map[string]string) counts {
	c := counts{}
	for name, key := range keys {
		if v, ok := m[key].(float64); ok {
			c[name] = int(v)
		}
	}
	return c
}

// fieldNames maps each count to itself, but for the renamed ones.
func fieldNames(renamed map[string]string, skip ...string) map[string]string {
	keys := map[string]string{}
	for _, n := range countNames {
		keys[n] = n
	}
	for n, k := range renamed {
		keys[n] = k
	}
	for _, n := range skip {
		delete(keys, n)
	}
	return keys
}

// runReports are the four accounts of one run.
type runReports struct {
	summary, passes, report, metrics counts
}

// reportsOf reads the accounts of run r: its "run summary" log line, the
// sum of its pass (and shutdown) lines, its --report and its metrics file.
func reportsOf(t *testing.T, r *exitRun) runReports {
	t.Helper()
	var out runReports
	out.passes = counts{}
	lines := fieldNames(nil)
	for _, l := range r.p.LogLines() {
		switch l["msg"] {
		case "run summary":
			out.summary = fromFields(l, fieldNames(map[string]string{"jobs": "fts_jobs"}))
		case "pass", "shutdown":
			for n, v := range fromFields(l, lines) {
				out.passes[n] += v
			}
		}
	}
	if out.summary == nil {
		t.Fatalf("%s logged no run summary\n%s", r.p.Name, r.p.Tail(20))
	}
	b, err := os.ReadFile(r.report)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	out.report = fromFields(rep, fieldNames(map[string]string{"jobs": "fts_jobs_created", "deleted": "deletions"}))
	out.metrics = metricsCounts(t, r.metrics, r.user)
	return out
}

// metricsCounts reads the transfers by outcome and the events of user
// from a metrics file (jobs are not among them).
func metricsCounts(t testing.TB, path, user string) counts {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := counts{}
	re := regexp.MustCompile(`(?m)^aso_(transfers_total\{outcome|events_total\{event)="(\w+)",user="` + regexp.QuoteMeta(user) + `"\} (\d+)$`)
	for _, m := range re.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[3]))
		c[string(m[2])] = n
	}
	for _, n := range countNames {
		if _, ok := c[n]; !ok && n != "jobs" {
			c[n] = 0
		}
	}
	return c
}

// byState counts user's transfers by state with aso status --json.
func byState(t testing.TB, w *proctest.World, user string) map[state.State]int {
	t.Helper()
	out := invocation{env: w.Env}.run(t, "status", "--state="+w.StateURL, "--user", user, "--json").wantCode(t, 0)
	var v struct {
		ByState map[state.State]int `json:"by_state"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &v); err != nil {
		t.Fatal(err)
	}
	return v.ByState
}

// wantAgree fails unless the four accounts of a run tell the same numbers,
// and the change in the queue from before to after is what they say: the
// done, failed and killed ones ended; each claim or settlement took one
// transfer from new, each retry, loss and release put one back; and what
// was claimed and not ended is still acquired or submitted.
func wantAgree(t *testing.T, name string, rs runReports, before, after map[state.State]int) counts {
	t.Helper()
	want := rs.summary
	for _, acc := range []struct {
		name string
		c    counts
	}{{"pass lines", rs.passes}, {"--report", rs.report}, {"metrics file", rs.metrics}} {
		for _, n := range countNames {
			if got, ok := acc.c[n]; ok && got != want[n] {
				t.Errorf("%s: %s says %s %d, the run summary %d", name, acc.name, n, got, want[n])
			}
		}
	}
	delta := func(s state.State) int { return after[s] - before[s] }
	ended := want["done"] + want["failed"] + want["retried"] + want["lost"] + want["killed"] + want["released"] + want["moved"]
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"done", delta(state.StateDone), want["done"]},
		{"failed", delta(state.StateFailed), want["failed"]},
		{"killed", delta(state.StateKilled), want["killed"]},
		{"new", delta(state.StateNew), want["retried"] + want["lost"] + want["released"] - want["claimed"] - want["settled"]},
		{"acquired or submitted", delta(state.StateAcquired) + delta(state.StateSubmitted), want["claimed"] + want["settled"] - ended},
	} {
		if c.got != c.want {
			t.Errorf("%s: aso status counts %+d %s, the run's counts %+d (%v)", name, c.got, c.what, c.want, want)
		}
	}
	t.Logf("%s: %v; queue before %v, after %v", name, want, before, after)
	return want
}

// slowFiles makes the simulator's files of chosen sources last ten
// minutes, until released.
type slowFiles struct {
	mu   sync.Mutex
	slow map[string]bool // source LFNs
}

func (s *slowFiles) set(lfn string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slow[lfn] = on
}

func (s *slowFiles) transferTime(src, _ string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for lfn, on := range s.slow {
		if on && strings.HasSuffix(src, lfn) {
			return 10 * time.Minute
		}
	}
	return 0
}

// TestRunProcess_EveryOutcomeCountedOnce runs an agent over a queue with
// every kind of outcome: done; failed for good (a missing source); retried
// after a retryable failure, then done (FTS refuses one of two transfers
// of one file to one destination while the other writes it, the first
// which then finds its own file there); a job FTS loses; a transfer killed
// while submitted; a dependency on the failed one, settled at claim; a
// transfer whose destination site the sites file does not know (aborted
// with an attempt, until it fails). A second run is stopped by SIGTERM
// while FTS holds its submission, and releases what it held back. For
// each run, its summary log line, its pass lines, its --report and its
// metrics file tell the same numbers, and the change in aso status is
// what they say. Each transfer settled at claim is logged with its reason.
func TestRunProcess_EveryOutcomeCountedOnce(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	backends(t, func(t *testing.T, couch bool) {
		const user = "tess"
		slow := &slowFiles{slow: map[string]bool{}}
		// FTS refuses a file whose destination an active file writes
		sim := ftstest.Options{Seed: 73, QueueDelay: 100 * time.Millisecond, TransferTime: 200 * time.Millisecond, TransferTimeOf: slow.transferTime, CheckDuplicates: true}
		w := proctest.New(t, proctest.Options{Couch: couch, Sim: sim, Seed: 73})
		st := "--state=" + w.StateURL
		queue := w.Generate(user, proctest.Good, 5) // done, done, done, lost, killed
		queue = append(queue, w.Generate(user, proctest.MissingSource, 1)...)
		lost, killed, missing := queue[3], queue[4], queue[5]
		// the same file to the same destination from another source: FTS
		// refuses one of the two (destination_busy, retried), which then
		// finds its file there (done)
		twin := *queue[0]
		twin.Request.SourceLFN = strings.Replace(twin.Request.SourceLFN, "good_", "twin_", 1)
		if err := os.WriteFile(w.SourcePath(&twin), twin.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		dep := w.Generate(user, proctest.Good, 2)
		dep[0].Request.DependsOn = []string{missing.ID()}
		nowhere := dep[1]
		nowhere.Request.Destination = "T1_XX_Nowhere" // not in the sites file
		w.Enqueue(append(append(queue, &twin), dep...))
		slow.set(lost.Request.SourceLFN, true)
		slow.set(killed.Request.SourceLFN, true)

		before := byState(t, w, user)
		args := []string{"--max-files-per-job", "1", "--cool-off", "1s", "--max-attempts", "3", "--lock-ttl", "1m", "--lease-ttl", "2m"}
		r := startRun(t, w, "outcomes", user, args...)
		job := waitSubmitted(t, w, r.p, lost.ID())
		slow.set(lost.Request.SourceLFN, false)
		w.Sim.LoseJob(job)
		waitSubmitted(t, w, r.p, killed.ID())
		invocation{env: w.Env}.run(t, "kill", st, "--user", user, killed.ID()).wantCode(t, 0)
		r.wantExit(t, w, cmd.ExitOK, true)
		got := wantAgree(t, "every outcome", reportsOf(t, r), before, byState(t, w, user))
		for _, n := range []string{"done", "failed", "retried", "lost", "killed", "settled"} {
			if got[n] == 0 {
				t.Errorf("no transfer %s: the run did not have every kind of outcome", n)
			}
		}
		wantLogged(t, r.p, "transfer settled by the claim", dep[0].ID(), missing.ID())
		wantLogged(t, r.p, "transfer aborted", nowhere.ID(), "T1_XX_Nowhere")

		released := releasedAtStop(t, w, user)
		if released["claimed"] != 13 || released["released"] != 3 {
			t.Errorf("the run stopped while FTS held its jobs claimed %d and released %d transfers, want 13 claimed and 3 (not in a full job) released", released["claimed"], released["released"])
		}
		w.RunToEnd(user, 2*time.Minute, args...)
		rep := w.Check(proctest.CheckOptions{LostJobs: []string{job}})
		t.Logf("%s", rep)
		rep.Require(t)
	})
}

// TestRunProcess_CopiesAlreadyGoneCountedApart: every file fails after FTS
// started copying it, so the agent deletes its destination copy, which
// the simulator (writing to a temporary name, as url-copy does) never
// left: gfal-rm finds each missing. Those are no deletions: the run
// summary, its pass lines, --report and the metrics count them
// already_gone, one per failed attempt, and deleted none.
func TestRunProcess_CopiesAlreadyGoneCountedApart(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	const user = "gwen"
	sim := ftstest.Options{Seed: 79, QueueDelay: 50 * time.Millisecond, TransferTime: 100 * time.Millisecond,
		FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}}
	w := proctest.New(t, proctest.Options{Sim: sim, Seed: 79})
	w.Add(user, proctest.Good, 4)
	before := byState(t, w, user)
	r := startRun(t, w, "gone", user, "--max-attempts", "2", "--cool-off", "100ms", "--lock-ttl", "1m")
	r.wantExit(t, w, cmd.ExitOK, true)
	got := wantAgree(t, "copies already gone", reportsOf(t, r), before, byState(t, w, user))
	if got["failed"] != 4 || got["deleted"] != 0 || got["already_gone"] != 8 {
		t.Errorf("failed %d, deleted %d, already gone %d; want 4 failed after 2 attempts each, 0 deleted and 8 already gone",
			got["failed"], got["deleted"], got["already_gone"])
	}
}

// releasedAtStop enqueues 13 transfers and runs an agent that claims 12,
// submits two jobs of 5 and holds back 2 while it claims the last one. It
// is stopped by SIGTERM while FTS holds the submission of the 10, and
// releases the 3 it did not submit without penalty. It checks that the
// run's accounts agree, and returns them.
func releasedAtStop(t *testing.T, w *proctest.World, user string) counts {
	t.Helper()
	w.Add(user, proctest.Good, 13)
	front := newFTSFront(t, w.Sim.URL)
	gate := make(chan struct{})
	front.set("submit", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		front.set("submit", nil)
		front.pass(rw, r)
	})
	before := byState(t, w, user)
	arrived := front.arrival("submit")
	r := startRun(t, w, "stopped", user, "--fts", front.URL, "--batch-size", "12", "--max-files-per-job", "5", "--lock-ttl", "1m", "--lease-ttl", "2m")
	select {
	case <-arrived:
	case <-r.p.Done():
		t.Fatalf("the run ended before it submitted\n%s", r.p.Tail(20))
	}
	r.p.Term()
	if !r.p.WaitLog(`"count":1`, time.Minute) {
		t.Fatalf("the signal was not logged\n%s", r.p.Tail(20))
	}
	close(gate)
	r.wantExit(t, w, cmd.ExitOK, true)
	return wantAgree(t, "stopped while submitting", reportsOf(t, r), before, byState(t, w, user))
}

// waitSubmitted waits until transfer id is submitted (in the store) and
// returns its FTS job.
func waitSubmitted(t *testing.T, w *proctest.World, p *proctest.Proc, id string) string {
	t.Helper()
	var job string
	if !w.AwaitStore(time.Minute, p.Done(), func() bool {
		tr, err := w.Store().Get(context.Background(), id)
		job = tr.FTSJob
		return err == nil && tr.State == state.StateSubmitted
	}) {
		t.Fatalf("%s submitted never came; %s logged, besides passes:\n%s", id, p.Name, strings.Join(notPasses(p), "\n"))
	}
	return job
}

// notPasses are the log lines of p other than pass summaries.
func notPasses(p *proctest.Proc) []string {
	var out []string
	for _, l := range p.LogLines() {
		if l["msg"] != "pass" {
			b, _ := json.Marshal(l)
			out = append(out, string(b))
		}
	}
	return out
}

// wantLogged fails unless p logged msg at info for transfer id, with a
// reason that contains why.
func wantLogged(t *testing.T, p *proctest.Proc, msg, id, why string) {
	t.Helper()
	for _, l := range p.LogLines() {
		if l["msg"] == msg && l["transfer_id"] == id && l["level"] == "info" && strings.Contains(fmt.Sprint(l["reason"]), why) {
			return
		}
	}
	t.Errorf("no %q line at info for %s giving a reason with %q\n%s", msg, id, why, p.Tail(40))
}
