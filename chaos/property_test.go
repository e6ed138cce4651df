package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The property test: on each backend, a seeded random sequence of steps
// (requests that collide, aliases, files put at destinations by hand,
// agents run, stopped, killed and restarted under every fault the FTS
// simulator can inject, `aso kill`), and after each step a check from the
// file system, not from aso's records, that
//   - every file a done transfer names is present, held the bytes its
//     request asked for when it became done, and is unchanged since;
//   - no source is ever deleted or changed;
//   - no file put at a destination by hand is ever deleted or changed.
//
// `go test ./chaos` runs a short sequence (every kind of step once);
// ASO_CHAOS=full (make chaos) a long one. ASO_CHAOS_SEED sets the seed:
// default 1, and with ASO_CHAOS=full one drawn from the clock. A failure
// prints the seed, the steps so far and the command that replays the
// sequence; the faults land at moments seen from outside (a submission
// arriving, a status query), so a replay takes the same steps but the
// agents may be a little further on when a fault lands.

// Kinds of step.
var (
	enqueueSteps = []string{"fresh", "missing-source", "bad-checksum", "collide", "collide-mirror", "place", "onto-placed", "self-alias"}
	runSteps     = []string{"run", "sigterm", "sigint", "sigkill", "lost-job", "fts-hang", "failures", "aso-kill"}
)

// propertyLength is the number of random steps after the ones that take
// every kind of step once: none in the short run.
const propertyLength = 80

func TestProperty(t *testing.T) {
	full := os.Getenv("ASO_CHAOS") == "full"
	seed := propertySeed(t, full)
	var rows []propRow
	for _, b := range []backend{memfile, couch} {
		t.Run(string(b), func(t *testing.T) {
			rows = append(rows, runProperty(t, b, seed, plan(seed, full)))
		})
	}
	mode := "short"
	if full {
		mode = "full"
	}
	t.Logf("property (%s, seed %d):\n%s", mode, seed, propTable(rows))
}

// propertySeed is ASO_CHAOS_SEED, else 1 (short) or the clock (full).
func propertySeed(t *testing.T, full bool) uint64 {
	if s := os.Getenv("ASO_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ASO_CHAOS_SEED=%q: want a non-negative integer", s)
		}
		return v
	}
	if full {
		return uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	return 1
}

// plan is the sequence of steps of seed: files to copy and a run first
// (so that later requests find done transfers to collide with), every
// other kind of step once, an enqueue step followed by a run step, then,
// in the full run, propertyLength steps drawn at random.
func plan(seed uint64, full bool) []string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	es, rs := append([]string(nil), enqueueSteps[1:]...), append([]string(nil), runSteps[1:]...)
	rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
	rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	steps := []string{"fresh", "run"}
	for i := range es {
		steps = append(steps, es[i], rs[i])
	}
	if full {
		for range propertyLength {
			if rng.Float64() < 0.55 {
				steps = append(steps, enqueueSteps[rng.IntN(len(enqueueSteps))])
			} else {
				steps = append(steps, runSteps[rng.IntN(len(runSteps))])
			}
		}
	}
	return steps
}

// propRow is one backend's line of the table.
type propRow struct {
	backend                 backend
	steps, requests, placed int
	done, broken            int
	took                    time.Duration
	pass                    bool
}

// runProperty takes steps on a new World of backend b, checks the
// invariant after each one, and after the last lets every queue drain and
// checks once more.
func runProperty(t *testing.T, b backend, seed uint64, steps []string) propRow {
	start := time.Now()
	pw := newPWorld(t, b, seed)
	row := propRow{backend: b}
	user := propUser
	var took []string
	for i, kind := range append(steps, "drain") {
		at := time.Now()
		user = pw.step(kind, user)
		took = append(took, fmt.Sprintf("%d %s (%s, %s)", i+1, kind, user, time.Since(at).Round(100*time.Millisecond)))
		bad, done, err := pw.ledger.check(pw.w.Store(), pw.destPath)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, kind, err)
		}
		row.steps, row.done, row.broken = i+1, done, len(bad)
		if len(bad) > 0 {
			t.Errorf("seed %d, after step %d (%s): the invariant is broken:\n  %s\nsteps: %s\nreplay: ASO_CHAOS_SEED=%d go test -count=1 -run 'TestProperty/%s' ./chaos",
				seed, i+1, kind, strings.Join(bad, "\n  "), strings.Join(took, ", "), seed, b)
			break
		}
	}
	row.requests, row.placed = len(pw.reqs), len(pw.ledger.placed)
	row.took, row.pass = time.Since(start), !t.Failed()
	t.Logf("seed %d: %d steps, %d requests, %d done files checked, %d hand-placed files\nFTS failures by class:\n%swhat the steps did:\n%ssteps: %s",
		seed, row.steps, row.requests, row.done, row.placed, pw.failureClasses(), pw.tallyText(), strings.Join(took, ", "))
	return row
}

// step takes one step; user is the user whose agent a run step runs, the
// user of the last requests made.
func (pw *pworld) step(kind, user string) string {
	pw.t.Helper()
	switch kind {
	case "fresh":
		pw.enqueueFresh(propUser)
	case "missing-source":
		pw.enqueueFailing(kind, noSource)
	case "bad-checksum":
		pw.enqueueFailing(kind, badChecksum)
	case "collide":
		pw.enqueueCollision(false)
	case "collide-mirror":
		pw.enqueueCollision(true)
	case "place":
		pw.placeByHand()
	case "onto-placed":
		pw.enqueueOntoPlaced()
	case "self-alias":
		pw.enqueueSelfAlias()
		return aliasUser
	case "drain":
		pw.drain(aliasUser)
		pw.drain(propUser)
		return user
	default:
		pw.runWith(user, kind)
		return user
	}
	return propUser
}

// failureClasses counts the reasons of the FTS files that failed, by
// class, as the simulator recorded them.
func (pw *pworld) failureClasses() string {
	n := map[string]int{}
	for _, f := range pw.w.Sim.Files() {
		if f.Reason == "" {
			continue
		}
		n[failureClass(f.Reason)]++
	}
	return countsText(n)
}

// failureClass names the class of an FTS reason.
func failureClass(reason string) string {
	switch {
	case strings.Contains(reason, "[17]"):
		return "destination exists"
	case strings.Contains(reason, "checksum do not match"):
		return "checksum mismatch"
	case strings.Contains(reason, "[110]") || strings.Contains(reason, "timeout") || strings.Contains(reason, "Timeout"):
		return "timeout"
	case strings.HasPrefix(reason, "SOURCE [2]"):
		return "source missing"
	case strings.HasPrefix(reason, "SOURCE"):
		return "source, other"
	case strings.HasPrefix(reason, "DESTINATION"):
		return "destination phase"
	case strings.HasPrefix(reason, "TRANSFER"):
		return "transfer phase"
	}
	return "other"
}

func (pw *pworld) tallyText() string { return countsText(pw.tally) }

// countsText lists counts as "name: n" lines, sorted by name.
func countsText(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %d\n", k, n[k])
	}
	return b.String()
}

// propTable formats the rows as an aligned table.
func propTable(rows []propRow) string {
	lines := []string{"backend\tsteps\trequests\tdone files checked\thand-placed files\tbroken\ttime\tresult"}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s", r.backend, r.steps, r.requests, r.done, r.placed, r.broken, r.took.Round(100*time.Millisecond), result(r.pass)))
	}
	return tabulate(lines)
}
