package agent

import (
	"context"

	"github.com/asyncstageout/aso/state"
)

// maxRecordedError bounds the error text recorded with a run.
const maxRecordedError = 500

// releaseLock releases the run lock l and, when the store can, records the
// run in the same write: its start, its end (now) and the exit code runErr
// maps to, so that `aso status` shows how the user's last run ended.
func (a *Agent) releaseLock(ctx context.Context, l state.Lock, runErr error) error {
	if a.recorder == nil {
		return a.store.ReleaseLock(ctx, l)
	}
	run := state.RunRecord{Holder: l.Holder, Started: state.At(a.start), Ended: state.At(a.cfg.Now()), ExitCode: a.exitCode(runErr)}
	if runErr != nil {
		run.Error = runErr.Error()
		if len(run.Error) > maxRecordedError {
			run.Error = run.Error[:maxRecordedError] + "..."
		}
	}
	return a.recorder.ReleaseLockRecord(ctx, l, run)
}

func (a *Agent) exitCode(err error) int {
	switch {
	case a.cfg.ExitCode != nil:
		return a.cfg.ExitCode(err)
	case err != nil:
		return 1
	}
	return 0
}
