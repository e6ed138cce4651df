package serve

import (
	"fmt"
	"time"

	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// classHints say in a few words what a failure's error class means for
// the person whose file it is (docs/operators.md, Error classes, has the rules).
var classHints = map[string]string{
	"source_missing":         "the source file does not exist: check that the job wrote it",
	"source_permission":      "the source storage refused to let it be read",
	"destination_exists":     "a file was already at the destination and aso does not overwrite what it did not write",
	"destination_permission": "the destination storage refused the write: check your quota and the directory's permissions",
	"destination_busy":       "another transfer was writing the same destination; aso tries again after the cool-off",
	"no_space":               "no space or over quota at the destination",
	"checksum_mismatch":      "the file's checksum differs between source and destination",
	"timeout":                "the transfer timed out; aso retries it",
	"storage_unavailable":    "a storage could not be reached or failed; aso retries it",
	"queue_expired":          "FTS cancelled it after it waited too long in its queue; it never ran",
	"canceled":               "it was cancelled in FTS, not by aso kill",
	"credentials":            "the proxy or token expired or was refused: renew it, and aso retries",
	"tls":                    "a storage's TLS handshake failed on a certificate (its host certificate, or the CA or CRL that checks it, expired, revoked or not trusted): the site fixes it, and aso retries",
	"unsupported":            "the protocol or URL cannot be used",
	"same_file":              "its source and destination may be one file: aso never submits it, and never deletes its source",
	"unknown":                "aso could not classify the failure: read the reason",
}

// explain says in plain words where t is and why it is not done yet, from
// the transfer, its dependencies and its user's run lock (nil if none).
func explain(t *state.Transfer, deps []statusview.Dependency, lock *statusview.LockView, now time.Time, staleAfter time.Duration) []string {
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	switch t.State {
	case state.StateNew:
		return explainNew(t, deps, lock, now)
	case state.StateAcquired:
		if t.LeaseExpires.After(now) {
			say("An agent (%s) has claimed it and is submitting it to FTS; its claim lasts until %s.", t.Owner, when(t.LeaseExpires.Time, now))
		} else {
			say("The agent that claimed it (%s) stopped renewing its claim at %s: the next agent run of %s takes it over.", t.Owner, when(t.LeaseExpires.Time, now), t.User)
		}
	case state.StateSubmitted:
		say("Running in FTS job %s%s.", t.FTSJob, progressText(t))
		if t.LastUpdate.Before(now.Add(-staleAfter)) {
			say("No agent has looked at it since %s: the next agent run of %s asks FTS how it went.", when(t.LastUpdate.Time, now), t.User)
		}
	case state.StateDone:
		say("Done at %s: the file is at %s on %s.", when(t.LastUpdate.Time, now), t.DestinationLFN, t.Destination)
	case state.StateFailed:
		say("Failed at %s after %d attempt(s): %s.", when(t.LastUpdate.Time, now), t.Attempts, orNone(t.Reason))
		class := state.FailureClass(t.ErrorClass)
		say("Error class %s: %s. aso retry %.16s queues it again.", class, classHints[class], t.ID)
	case state.StateKilled:
		say("Killed at %s: %s.", when(t.LastUpdate.Time, now), orNone(t.Reason))
	}
	if t.KillRequested && !t.State.Terminal() {
		say("A kill was requested: the agent cancels it in FTS and marks it killed.")
	}
	return out
}

// explainNew explains a transfer waiting in the queue.
func explainNew(t *state.Transfer, deps []statusview.Dependency, lock *statusview.LockView, now time.Time) []string {
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if t.KillRequested {
		say("A kill was requested: the next agent run of %s marks it killed.", t.User)
		return out
	}
	for _, d := range deps {
		switch d.State {
		case state.StateDone:
		case "":
			say("Waiting for dependency %.16s, which is not stored (yet): it fails if none arrives in time.", d.ID)
		case state.StateFailed, state.StateKilled:
			say("Dependency %.16s is %s (%s): the next agent run fails this transfer too.", d.ID, d.State, orNone(d.Reason))
		default:
			say("Waiting for dependency %.16s, which is %s.", d.ID, d.State)
		}
	}
	if t.Attempts > 0 && t.Reason != "" {
		say("Attempt %d failed: %s (error class %s: %s).", t.Attempts, t.Reason, state.FailureClass(t.ErrorClass), classHints[state.FailureClass(t.ErrorClass)])
	}
	if t.RetryAfter.After(now) {
		say("Waiting for its cool-off until %s; then an agent submits it again.", when(t.RetryAfter.Time, now))
	} else if len(out) == 0 || t.Attempts > 0 {
		say("In %s's queue since %s, waiting for an agent to submit it.", t.User, when(t.LastUpdate.Time, now))
	}
	out = append(out, agentText(t.User, lock, now))
	return out
}

// agentText says whether an agent of user is running, or how the last
// run ended.
func agentText(user string, l *statusview.LockView, now time.Time) string {
	switch {
	case l != nil && l.Held && l.Process == "stopped":
		return fmt.Sprintf("An agent of %s holds the run lock on %s (pid %d) since %s, but is stopped, not dead: it goes on when resumed, and its lock is not taken over while it is valid.", user, l.Host, l.PID, when(l.Since.Time, now))
	case l != nil && l.Held:
		return fmt.Sprintf("An agent of %s is running on %s (pid %d) since %s.", user, l.Host, l.PID, when(l.Since.Time, now))
	case l != nil && l.LastRun != nil:
		r := l.LastRun
		return fmt.Sprintf("No agent of %s is running; the last run ended %s with exit code %d (%s).", user, when(r.Ended.Time, now), r.ExitCode, exitMeaning(r.ExitCode))
	}
	return fmt.Sprintf("No agent of %s is running, and none has run yet.", user)
}

// exitMeaning is what an agent's exit code means (aso --help).
func exitMeaning(code int) string {
	switch code {
	case exitcode.OK:
		return "success"
	case exitcode.Error:
		return "an error"
	case exitcode.Usage:
		return "a usage error"
	case exitcode.Locked:
		return "another agent held the lock"
	case exitcode.TempFail:
		return "temporary: the store or FTS could not be reached; it runs again"
	case exitcode.Config:
		return "needs a person: configuration or credentials are wrong"
	case -1:
		return "unknown: its lock was released by aso unlock"
	}
	return "see aso --help"
}

// progressText is what FTS last said of a submitted transfer.
func progressText(t *state.Transfer) string {
	p := t.Progress
	if p == nil {
		return ", no news from FTS yet"
	}
	s := fmt.Sprintf(", FTS state %s", p.FTSState)
	if p.Bytes > 0 && t.Size > 0 {
		s += fmt.Sprintf(", %d of %d bytes (%.0f%%)", p.Bytes, t.Size, 100*float64(p.Bytes)/float64(t.Size))
	}
	if p.Throughput > 0 {
		s += fmt.Sprintf(" at %.2f MiB/s", p.Throughput)
	}
	if p.Retries > 0 {
		s += fmt.Sprintf(", %d FTS retries (%s)", p.Retries, orNone(p.Reason))
	}
	return s
}

// brief is a list row's one-line why.
func brief(t *state.Transfer, now time.Time) string {
	switch {
	case t.KillRequested && !t.State.Terminal():
		return "kill requested"
	case t.State == state.StateNew && t.RetryAfter.After(now):
		return "cool-off until " + when(t.RetryAfter.Time, now) + " after: " + t.Reason
	case t.State == state.StateNew && len(t.DependsOn) > 0:
		return "waits for its dependencies"
	case t.State == state.StateNew:
		return "queued"
	case t.State == state.StateSubmitted:
		return "in FTS job " + t.FTSJob + progressText(t)
	case t.State == state.StateFailed || t.State == state.StateKilled:
		return t.Reason
	}
	return ""
}

// when formats t and how far it is from now.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "(never)"
	}
	d := now.Sub(t).Round(time.Second)
	rel := d.String() + " ago"
	if d < 0 {
		rel = "in " + (-d).String()
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC") + " (" + rel + ")"
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
