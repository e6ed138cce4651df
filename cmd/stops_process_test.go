package cmd_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// goneWithItsRun is the reason a job of the in-process simulator of an
// earlier run gets when the next run finds it gone.
const goneWithItsRun = "was lost: the in-process FTS simulator of an earlier run ended with it"

// TestRunProcess_StopsChargeNothing: `aso run --fts local` is stopped
// three times while every transfer is in a job of its in-process
// simulator (SIGINT, SIGKILL, SIGTERM, each once the run has logged the
// submission of every file), then run to the end. The simulator's jobs die
// with each process; each next run finds them gone and sends their
// transfers again without an attempt counted, so that with
// --max-attempts 3 every transfer still ends done, at no charge (before,
// each stop cost every transfer an attempt, and the third failed them
// all). Each transfer's history shows the three jobs lost with their run.
func TestRunProcess_StopsChargeNothing(t *testing.T) {
	t.Parallel() // processes mostly wait: overlap with the other process tests
	const user, n = "stan", 20
	w := proctest.New(t, proctest.Options{Sim: fastSim(61), Seed: 61})
	es := w.Add(user, proctest.Good, n)
	args := []string{"--fts", "local", "--max-attempts", "3", "--max-files-per-job", "5", "--lock-ttl", "1m"}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL, syscall.SIGTERM} {
		p := w.StartAgent(user, append(args, "--sim-transfer-time", "1h")...)
		sent := 0
		if !p.Await(2*time.Minute, func(l map[string]any) bool {
			if l["msg"] == "job submitted" {
				files, _ := l["files"].(float64)
				sent += int(files)
			}
			return sent >= n
		}) {
			t.Fatalf("the run before %s submitted %d of %d files (exit %d)\n%s", sig, sent, n, p.Code(), p.Tail(30))
		}
		if sig == syscall.SIGKILL {
			p.Kill()
			continue
		}
		if err := syscall.Kill(p.Pid(), sig); err != nil {
			t.Fatal(err)
		}
		if code := p.Wait(time.Minute); code != cmd.ExitOK {
			t.Fatalf("exit %d after %s, want 0\n%s", code, sig, p.Tail(30))
		}
	}
	last := w.RunToEnd(user, 2*time.Minute, args...)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, e := range es {
		tr, err := w.Store().Get(ctx, e.ID())
		if err != nil {
			t.Fatal(err)
		}
		gone := 0
		for _, h := range tr.History {
			if strings.Contains(h.Reason, goneWithItsRun) {
				gone++
			}
		}
		if tr.State != state.StateDone || tr.Attempts != 0 || gone != 3 {
			t.Errorf("%s: %s after %d failed attempts (%q), %d jobs lost with their run; want done, none charged, 3 lost\n%+v",
				tr.ID, tr.State, tr.Attempts, tr.Reason, gone, tr.History)
		}
		if b, err := os.ReadFile(w.DestPath(e)); err != nil || !bytes.Equal(b, e.Data) {
			t.Errorf("%s: the destination does not hold the source's bytes (%d bytes, %v)", tr.ID, len(b), err)
		}
	}
	if t.Failed() {
		t.Logf("the last run:\n%s", last.Tail(40))
	}
}
