package agent

import (
	"context"
	"time"
)

// PassStats counts what one pass did.
type PassStats struct {
	Pass       int
	Claimed    int // transfers claimed
	Submitted  int // transfers committed to an FTS job (including adopted ones)
	Jobs       int // FTS jobs submitted or adopted
	Aborted    int // claims ended without a job (resolution or submission failure)
	Pending    int // submissions whose outcome is not known yet
	Active     int // transfers still running in FTS
	Done       int
	Failed     int
	Retried    int // failures sent back to new for another attempt
	Killed     int
	Lost       int // transfers of jobs FTS no longer knows, sent back to new
	Deleted    int // destination copies deleted (or found missing)
	Existing   int // of Done: "destination exists" failures whose file there is the transfer's own
	Unrecorded int // terminal outcomes not recorded this pass (retried next pass)
	Errors     int // phase errors (a batch skipped)

	Submit, Monitor, Record time.Duration

	more bool // the last claim came back full: more is waiting
	// running counts the transfers FTS answered for as still running (of
	// Active, which also counts those of jobs it did not answer for)
	running int
}

// Add folds the next pass q into p, a run's running total: the counts and
// durations add up; Pass, Active, Pending and Unrecorded, which say where
// the run stands, are q's.
func (p *PassStats) Add(q PassStats) {
	p.Pass, p.Active, p.Pending, p.Unrecorded = q.Pass, q.Active, q.Pending, q.Unrecorded
	p.Claimed += q.Claimed
	p.Submitted += q.Submitted
	p.Jobs += q.Jobs
	p.Aborted += q.Aborted
	p.Done += q.Done
	p.Failed += q.Failed
	p.Retried += q.Retried
	p.Killed += q.Killed
	p.Lost += q.Lost
	p.Deleted += q.Deleted
	p.Existing += q.Existing
	p.Errors += q.Errors
	p.Submit += q.Submit
	p.Monitor += q.Monitor
	p.Record += q.Record
}

// progressed: the pass changed something (claimed, submitted, recorded,
// sent back, ended or deleted) or FTS answered for transfers still
// running: the run is doing its work, whatever else fails.
func (p PassStats) progressed() bool {
	return p.Claimed+p.Submitted+p.Jobs+p.Aborted+p.Done+p.Failed+p.Retried+p.Killed+p.Lost+p.Deleted+p.running > 0
}

// drained: the pass found nothing to do: nothing claimed or submitted,
// nothing active, nothing pending, and no outcome recorded (an outcome may
// unblock dependents, which the next pass claims).
func (p PassStats) drained() bool {
	return p.Claimed == 0 && p.Submitted == 0 && p.Active == 0 && p.Unrecorded == 0 && p.Pending == 0 && p.Errors == 0 &&
		p.Done+p.Failed+p.Retried+p.Killed+p.Lost+p.Aborted == 0
}

// pass runs the three phases once; monitor and record alternate, one group
// of jobs at a time.
func (a *Agent) pass(stop, work context.Context, n int) PassStats {
	ps := PassStats{Pass: n}
	t0 := a.cfg.Now()
	a.submitPhase(stop, work, &ps)
	ps.Submit = a.cfg.Now().Sub(t0)
	a.monitorPhase(work, &ps) // and record, group by group
	a.metrics.observePass(ps)
	a.log.WithFields(map[string]any{
		"pass": n, "claimed": ps.Claimed, "submitted": ps.Submitted, "jobs": ps.Jobs, "aborted": ps.Aborted,
		"pending": ps.Pending, "active": ps.Active, "done": ps.Done, "failed": ps.Failed, "retried": ps.Retried,
		"killed": ps.Killed, "lost": ps.Lost, "deleted": ps.Deleted, "existing": ps.Existing, "unrecorded": ps.Unrecorded, "errors": ps.Errors,
		"submit_s": ps.Submit.Seconds(), "monitor_s": ps.Monitor.Seconds(), "record_s": ps.Record.Seconds(),
	}).Info("pass")
	return ps
}
