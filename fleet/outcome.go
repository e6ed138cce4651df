package fleet

import (
	"fmt"

	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/state"
)

// outcome is how the fleet's agents ended, for its exit code and its last
// line.
type outcome struct {
	// worst is the most severe exit code noted; ok and locked count the
	// agents that drained their user's queue and that found its lock held
	worst, ok, locked int
}

// note records an exit code of the fleet's: an agent's, or the fleet's own
// finding (no agent could start).
func (o *outcome) note(code int) {
	if exitcode.Severity(code) > exitcode.Severity(o.worst) {
		o.worst = code
	}
}

// agentExited records the exit code of an agent that ran.
func (o *outcome) agentExited(code int) {
	o.note(code)
	switch code {
	case exitcode.OK:
		o.ok++
	case exitcode.Locked:
		o.locked++
	}
}

// exitCode is the fleet's exit code: the most severe of its agents', 3
// only if no agent drained a queue (every user it tried was held by
// another host).
func (o *outcome) exitCode() int {
	if o.worst == exitcode.Locked && o.ok > 0 {
		return exitcode.OK
	}
	return o.worst
}

// summary is the error the fleet ends with, exit code code, having
// started agents.
func (o *outcome) summary(code, started int) error {
	if code == exitcode.Locked {
		return fmt.Errorf("every user with due work is being worked on by agents elsewhere: %w", state.ErrLocked)
	}
	return fmt.Errorf("%d of %d agents ended with an error (the most severe: exit %d); see their log lines", started-o.ok-o.locked, started, code)
}
