package chaos_test

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
)

// backend is a state store a scenario runs on.
type backend string

const (
	memfile backend = "memfile"
	couch   backend = "couch"
)

// user is the grid user of every scenario.
const user = "chaos"

// size scales a scenario: the short run of go test, or make chaos.
type size struct {
	transfers int           // enqueued before the faults start
	wave      int           // enqueued again every quarter of the window
	window    time.Duration // how long faults are injected
	kills     int           // SIGKILL or SIGTERM rounds
}

var (
	short = size{transfers: 30, wave: 6, window: 3 * time.Second, kills: 3}
	full  = size{transfers: 120, wave: 20, window: 10 * time.Second, kills: 12}
)

// scenario is one fault and the runs it applies to.
type scenario struct {
	name string
	// on lists the backends the scenario applies to (default both); ci the
	// ones it runs on in the short run (none: make chaos only).
	on, ci []backend
	// sim adjusts the simulator of the World.
	sim func(e *env, o *ftstest.Options)
	// prepare runs after the World is built and before requests are
	// enqueued (TLS credentials, wrapper scripts, a tmpfs).
	prepare func(e *env)
	// run injects the faults, running agents meanwhile; every agent it
	// starts has stopped when it returns.
	run func(e *env)
}

func (s scenario) backends() []backend {
	if len(s.on) == 0 {
		return []backend{memfile, couch}
	}
	return s.on
}

func (s scenario) inCI(b backend) bool {
	for _, c := range s.ci {
		if c == b {
			return true
		}
	}
	return false
}

// row is one line of the result table.
type row struct {
	name, faults                string
	transfers, lost, dup, stuck int
	violations                  int // every broken invariant, one a line
	pass                        bool
	duration                    time.Duration
}

// TestChaos runs every scenario as a subtest and prints the table. The
// short run (default) takes the scenarios marked for CI; ASO_CHAOS=full runs
// all of them, larger. ASO_CHAOS_SEED sets the seed (default 1).
func TestChaos(t *testing.T) {
	sz, mode := short, "short"
	if os.Getenv("ASO_CHAOS") == "full" {
		sz, mode = full, "full"
	}
	seed := uint64(1)
	if s := os.Getenv("ASO_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ASO_CHAOS_SEED=%q: want a non-negative integer", s)
		}
		seed = v
	}
	var (
		mu   sync.Mutex
		rows []row
	)
	for _, sc := range scenarios {
		for _, b := range sc.backends() {
			if mode == "short" && !sc.inCI(b) {
				continue
			}
			name := sc.name + "/" + string(b)
			t.Run(name, func(t *testing.T) {
				r := runScenario(t, sc, b, sz, seed)
				r.name = name
				mu.Lock()
				rows = append(rows, r)
				mu.Unlock()
			})
		}
	}
	t.Logf("chaos (%s, seed %d):\n%s", mode, seed, table(rows))
	for _, r := range rows {
		if r.lost > 0 || r.dup > 0 {
			t.Errorf("%s: %d lost, %d duplicated", r.name, r.lost, r.dup)
		}
	}
}

// table formats rows as an aligned table.
func table(rows []row) string {
	lines := []string{"scenario\tfaults injected\ttransfers\tlost\tduplicated\tstuck\tviolations\ttime\tresult"}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s", r.name, r.faults, r.transfers, r.lost, r.dup, r.stuck, r.violations, r.duration.Round(100*time.Millisecond), result(r.pass)))
	}
	return tabulate(lines)
}

// tabulate aligns lines whose cells are separated by tabs.
func tabulate(lines []string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
	return b.String()
}

// result is the word of the table's last column.
func result(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// runScenario builds a World for sc on b, injects the faults, lets a last
// agent run undisturbed to the end, and checks every invariant.
func runScenario(t *testing.T, sc scenario, b backend, sz size, seed uint64) row {
	start := time.Now()
	h := fnv.New64a()
	h.Write([]byte(sc.name + "/" + string(b)))
	sim := ftstest.Options{
		Seed: int64(seed), QueueDelay: 150 * time.Millisecond, StartDelay: 50 * time.Millisecond, TransferTime: 250 * time.Millisecond,
		FailureRate: 0.1, FailureReasons: []string{"TRANSFER [110] Connection timed out"},
	}
	e := &env{t: t, backend: b, size: sz, rng: rand.New(rand.NewPCG(seed, h.Sum64())), faults: &faults{}, lostJobs: map[string]bool{}}
	if sc.sim != nil {
		sc.sim(e, &sim)
	}
	w := proctest.New(t, proctest.Options{Couch: b == couch, Sim: sim, Seed: seed, Lifetime: 4 * time.Minute})
	e.w = w
	e.fts = newLink(t, e.faults, "fts", hostOf(t, w.Sim.URL))
	e.ftsURL = e.fts.via(w.Sim.URL)
	e.args = []string{"--fts", e.ftsURL, "--max-files-per-job", "8"}
	if b == couch {
		e.couch = newLink(t, e.faults, "couch", hostOf(t, w.StateURL))
		e.args = append(e.args, "--state", e.couch.via(w.StateURL))
	}
	if sc.prepare != nil {
		sc.prepare(e)
	}
	w.AddMix(user, sz.transfers)
	sc.run(e)
	last := w.RunToEnd(user, 2*time.Minute, e.args...)
	r := excuseLostJobs(w.Check(proctest.CheckOptions{}), e.lostJobs, e.checkReasons())
	for _, v := range e.violations {
		t.Errorf("%s", v)
	}
	r.Require(t)
	t.Logf("%s; faults: %s; agents: %s; last agent ran %s", r, e.faults, &e.exits, last.Runtime().Round(time.Millisecond))
	if e.faults.total() == 0 {
		t.Errorf("no fault was injected: the scenario proves nothing")
	}
	return row{faults: e.faults.String(), transfers: r.Transfers, lost: r.Lost, dup: r.Duplicated, stuck: r.Stuck,
		violations: len(r.Violations) + len(e.violations),
		pass:       !t.Failed(), duration: time.Since(start)}
}

func hostOf(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("chaos: no host in %q (%v)", raw, err)
	}
	return u.Host
}
