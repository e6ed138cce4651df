package memfile_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// The crash test re-runs this test binary as a child that works on a state
// file in a loop and reports every call that returned on stdout, a line
// each; the parent kills it with SIGKILL as it reads the N-th report (N
// seeded), so the kill lands while the child is in the call after it (an
// append, an fsync, a compaction), whatever the machine's load, and checks
// that the file opens cleanly and holds everything that was reported.
const (
	crashEnvPath = "ASO_MEMFILE_CRASH_PATH"
	crashEnvGen  = "ASO_MEMFILE_CRASH_GEN"
	crashKills   = 24
	// crashReports bounds the reports after which the child is killed:
	// five a round of enqueue, claim, commit, outcome (and compaction).
	crashReports = 40
)

func TestCrash(t *testing.T) {
	if path := os.Getenv(crashEnvPath); path != "" {
		crashChild(path, os.Getenv(crashEnvGen))
		return
	}
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "state.aso")
	seed := uint64(42)
	if v := os.Getenv("ASO_MEMFILE_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ASO_MEMFILE_CRASH_SEED=%q: %v", v, err)
		}
		seed = n
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	rank := map[string]int{}
	torn := 0
	for gen := 0; gen < crashKills; gen++ {
		lines := runChild(t, path, gen, 1+rng.IntN(crashReports))
		for _, l := range lines {
			f := strings.Fields(l)
			r := map[string]int{"enqueued": 1, "claimed": 2, "committed": 3, "done": 4}[f[0]]
			for _, id := range f[1:] {
				rank[id] = max(rank[id], r)
			}
		}
		var w warnings
		s, err := memfile.OpenOptions(path, state.Config{}, memfile.Options{Warn: w.add, Create: true})
		if err != nil {
			t.Fatalf("after kill %d: %v", gen, err)
		}
		checkReported(t, s, rank, gen)
		s.Close()
		torn += len(w.msgs)
	}
	counts := map[int]int{}
	for _, r := range rank {
		counts[r]++
	}
	t.Logf("seed %d (ASO_MEMFILE_CRASH_SEED), %d kills, %d torn records dropped; transfers last reported enqueued %d, claimed %d, committed %d, done %d",
		seed, crashKills, torn, counts[1], counts[2], counts[3], counts[4])
	if counts[4] == 0 {
		t.Fatal("the child never finished a transfer before it was killed: the test proved little")
	}
}

func checkReported(t *testing.T, s *memfile.Store, rank map[string]int, gen int) {
	t.Helper()
	want := map[int]state.State{1: state.StateNew, 2: state.StateAcquired, 3: state.StateSubmitted, 4: state.StateDone}
	order := map[state.State]int{state.StateNew: 1, state.StateAcquired: 2, state.StateSubmitted: 3, state.StateDone: 4}
	ids := make([]string, 0, len(rank))
	for id := range rank {
		ids = append(ids, id)
	}
	got, err := s.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]state.State{}
	for _, tr := range got {
		stored[tr.ID] = tr.State
	}
	for id, r := range rank {
		st, ok := stored[id]
		if !ok || order[st] < r {
			t.Fatalf("after kill %d: transfer %s is %q (stored %v), but the child reported it %s", gen, id, st, ok, want[r])
		}
	}
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil || len(sum.Invalid) != 0 {
		t.Fatalf("after kill %d: summary %v, invalid %+v", gen, err, sum.Invalid)
	}
}

// runChild starts the child, kills it once it has read its n-th report,
// and returns the lines it reported completely (those it wrote before the
// kill took effect too).
func runChild(t *testing.T, path string, gen, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
	cmd.Env = append(os.Environ(), crashEnvPath+"="+path, crashEnvGen+"="+strconv.Itoa(gen))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "CRASH "); ok {
			if lines = append(lines, l); len(lines) == n {
				_ = cmd.Process.Signal(syscall.SIGKILL) // the child is in the step after its n-th
			}
		}
	}
	err = cmd.Wait()
	if len(lines) < n {
		t.Fatalf("kill %d: the child ended (%v) after %d reports, before the %d-th", gen, err, len(lines), n)
	}
	return lines
}

// crashChild enqueues, claims, commits and finishes transfers until killed,
// printing the IDs of every call that returned success.
func crashChild(path, gen string) {
	owner := "crash-" + gen
	s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: owner}}, memfile.Options{CompactBytes: 32 << 10, Create: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	report := func(what string, ids []string) {
		// one write per line: a line on stdout means the call returned
		os.Stdout.WriteString(strings.TrimSpace("CRASH "+what+" "+strings.Join(ids, " ")) + "\n")
	}
	for n := range crashReports { // more rounds than reports: the parent kills it first
		reqs := make([]state.Request, 5)
		for i := range reqs {
			reqs[i] = statetest.Req(statetest.Alice, n*5+i)
			reqs[i].SourceLFN = fmt.Sprintf("/store/crash/gen%s/%d.root", gen, n*5+i)
		}
		res, err := s.Enqueue(ctx, reqs)
		if err != nil {
			os.Exit(1)
		}
		var ids []string
		for _, r := range res {
			ids = append(ids, r.ID)
		}
		report("enqueued", ids)
		ts, err := statetest.Claim(ctx, s, 4)
		if err != nil {
			os.Exit(1)
		}
		report("claimed", idsOf(ts))
		commits := make([]state.Commit, len(ts))
		for i, tr := range ts {
			commits[i] = state.Commit{Transfer: tr, DestPFN: "file:///dst" + tr.DestinationLFN, FileID: int64(i + 1)}
		}
		job := fmt.Sprintf("job-%s-%d", gen, n)
		cres, err := statetest.Commit(ctx, s, commits, job)
		if err != nil {
			os.Exit(1)
		}
		report("committed", okIDs(cres))
		outs := make([]state.Terminal, 0, len(ts))
		for i, tr := range ts {
			if i%2 == 0 && cres[i].Err == nil {
				outs = append(outs, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: job})
			}
		}
		tres, err := s.SetTerminalState(ctx, outs)
		if err != nil {
			os.Exit(1)
		}
		report("done", okIDs(tres))
		if n%4 == 3 { // also die in the middle of compactions
			if err := s.Compact(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			report("compacted", nil)
		}
	}
	os.Exit(0)
}

func idsOf(ts []state.Transfer) []string {
	ids := make([]string, len(ts))
	for i, tr := range ts {
		ids[i] = tr.ID
	}
	return ids
}

func okIDs(res []state.Result) []string {
	var ids []string
	for _, r := range res {
		if r.Err == nil {
			ids = append(ids, r.ID)
		}
	}
	return ids
}
