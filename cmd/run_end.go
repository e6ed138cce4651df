package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// errSecondSignal ends a run stopped at once by a second stop signal.
var errSecondSignal = errors.New("stopped at once by a second signal: what was claimed stays claimed until its lease ends, or until the next run on this host takes the lock over")

// runEnd writes the report and the metrics file of one `aso run` once,
// with the exit code the process exits with: when the run returns, or on
// a second stop signal, whichever comes first. The run's lock record (the
// agent's) is written from the same error (Config.ExitCode), so the four
// tell one value.
type runEnd struct {
	g       *Globals
	report  string // --report ("": none)
	rep     *runReport
	metrics *metricsFile // nil: no --metrics-file
	store   state.Store  // nil until opened: the queue is read into both then

	mu    sync.Mutex
	ended bool
	code  int
}

// finish writes both with err's exit code, reading the queue from the
// store when it is open, and returns the code; only its first call
// writes, later ones return the first code.
func (e *runEnd) finish(ctx context.Context, err error) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.write(ctx, err, true)
}

func (e *runEnd) write(ctx context.Context, err error, count bool) int {
	if e.ended {
		return e.code
	}
	e.ended, e.code = true, ExitCode(err)
	e.metrics.end(ctx, err, count)
	if e.report != "" {
		if count && e.store != nil {
			e.rep.readQueue(ctx, e.g, e.store)
		}
		e.rep.finish(ctx, e.g, e.report, err)
	}
	return e.code
}

// secondSignal ends the run at once: the report and the metrics file are
// written without reading the store (it may be what hangs) and the process
// exits with their code; if the run is writing them already, with the
// run's code once they are written (waiting at most a few seconds).
func (e *runEnd) secondSignal(ctx context.Context) {
	fmt.Fprintln(e.g.Stderr, "aso: second signal: exiting at once")
	deadline := time.Now().Add(3 * time.Second)
	for !e.mu.TryLock() {
		if time.Now().After(deadline) {
			os.Exit(ExitError)
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Exit(e.write(ctx, errSecondSignal, false))
}
