package memfile_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

const claimEnvPath = "ASO_MEMFILE_CLAIM_PATH"

// TestProcesses_ExclusiveClaims runs several processes claiming from one
// file at once (with compaction forced often): every transfer is claimed
// exactly once, by the process that reported it.
func TestProcesses_ExclusiveClaims(t *testing.T) {
	if path := os.Getenv(claimEnvPath); path != "" {
		claimChild(path)
		return
	}
	const procs, n = 4, 400
	path := filepath.Join(t.TempDir(), "state.aso")
	s := open(t, path, memfile.Options{})
	all := enqueue(t, s, 0, n)
	s.Close()
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bufio.Scanner, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcesses_ExclusiveClaims$")
		cmd.Env = append(os.Environ(), claimEnvPath+"="+path, "ASO_MEMFILE_OWNER="+fmt.Sprint("proc-", i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], outs[i] = cmd, bufio.NewScanner(out)
	}
	claimed := make([][]string, procs)
	var wg sync.WaitGroup
	for i, sc := range outs {
		wg.Add(1)
		go func() { // read every pipe at once: a full pipe would block its writer
			defer wg.Done()
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "CLAIMED "); ok {
					claimed[i] = append(claimed[i], id)
				}
			}
		}()
	}
	wg.Wait()
	owner := map[string]int{}
	for i, ids := range claimed {
		if err := cmds[i].Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		for _, id := range ids {
			if j, dup := owner[id]; dup {
				t.Fatalf("transfer %s claimed by processes %d and %d", id, j, i)
			}
			owner[id] = i
		}
	}
	s = open(t, path, memfile.Options{})
	for _, id := range all {
		i, ok := owner[id]
		if !ok {
			t.Fatalf("transfer %s was never claimed", id)
		}
		tr, err := s.Get(ctx, id)
		if err != nil || tr.Owner != fmt.Sprint("proc-", i) || tr.State != state.StateAcquired {
			t.Fatalf("transfer %s claimed by proc-%d is %+v, %v", id, i, tr, err)
		}
	}
	busy := map[int]bool{}
	for _, i := range owner {
		busy[i] = true
	}
	t.Logf("%d processes claimed %d transfers", len(busy), len(owner))
}

func claimChild(path string) {
	s, err := memfile.OpenOptions(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: os.Getenv("ASO_MEMFILE_OWNER")}}, memfile.Options{CompactBytes: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		ts, err := statetest.Claim(ctx, s, 3)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if len(ts) == 0 {
			os.Exit(0)
		}
		for _, tr := range ts {
			fmt.Println("CLAIMED " + tr.ID)
		}
	}
}
