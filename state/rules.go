package state

import (
	"fmt"
	"sort"
	"time"
)

// The functions below are the state machine of docs/design.md (section 3) as pure functions on
// a Transfer. Backends read a document, apply one of them, and write it back
// revision-checked; on a conflict they re-read and apply it again, so the
// same checks decide whether the item is still theirs.

// Claimable reports whether t is eligible for NewTransfers by user at now,
// dependencies aside: new with retry_after passed, or acquired with an
// expired lease.
func Claimable(t *Transfer, user string, now time.Time) bool {
	if t.User != user {
		return false
	}
	switch t.State {
	case StateNew:
		return !t.RetryAfter.After(now)
	case StateAcquired:
		return !t.LeaseExpires.After(now)
	}
	return false
}

// SortForClaim orders transfers as NewTransfers returns them: priority
// descending, then oldest last_update, then ID.
func SortForClaim(ts []Transfer) {
	sort.SliceStable(ts, func(i, j int) bool { return ClaimLess(&ts[i], &ts[j]) })
}

// ClaimLess is the order of SortForClaim.
func ClaimLess(a, b *Transfer) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.LastUpdate.Equal(b.LastUpdate.Time) {
		return a.LastUpdate.Before(b.LastUpdate.Time)
	}
	return a.ID < b.ID
}

// Claim leases t to agent a until now+ttl. It fails with ErrLeaseLost when t
// is not claimable (someone else got it first).
func Claim(t *Transfer, a Agent, now time.Time, ttl time.Duration) error {
	if !Claimable(t, a.User, now) {
		return fmt.Errorf("claim %s (state %s, owner %q): %w", t.ID, t.State, t.Owner, ErrLeaseLost)
	}
	reason := ""
	if t.State == StateAcquired {
		reason = fmt.Sprintf("lease of %s expired at %s", t.Owner, t.LeaseExpires)
	}
	t.Transition(StateAcquired, now, a.Owner, reason)
	t.Owner = a.Owner
	t.LeaseExpires = At(now.Add(ttl))
	return nil
}

// SettleUnrunnable applies to a claimable transfer that must not run: with
// kill_requested it becomes killed; one whose dependencies can never all be
// done (see CheckDeps) becomes failed with the reason. It reports whether t
// was settled. A transfer carrying a sid is never settled here: its agent
// may have submitted it before dying ahead of the commit, so it is claimed
// (ReadyToClaim) and its job looked up in FTS first, where a kill is a
// cancellation.
func SettleUnrunnable(t *Transfer, d Deps, now time.Time, by string) bool {
	if t.SubmitSID != "" {
		return false
	}
	if t.KillRequested {
		t.Transition(StateKilled, now, by, "killed by request before submission")
		clearLease(t)
		return true
	}
	if v, reason := CheckDeps(t, d, now); v == DepsFailed {
		t.Transition(StateFailed, now, by, reason)
		clearLease(t)
		return true
	}
	return false
}

// ReadyToClaim reports whether a claimable transfer that SettleUnrunnable
// left alone is claimed now: its dependencies are all done, or it carries
// a sid (its job may be in FTS and must be looked up, whatever its
// dependencies say since).
func ReadyToClaim(t *Transfer, d Deps, now time.Time) bool {
	if t.SubmitSID != "" {
		return true
	}
	v, _ := CheckDeps(t, d, now)
	return v == DepsReady
}

// Held checks that t is acquired by agent a. A lease that expired without
// anyone else claiming the transfer is still held: the revision check of the
// write proves nobody else touched it.
func Held(t *Transfer, a Agent) error {
	if t.State != StateAcquired || t.Owner != a.Owner {
		return fmt.Errorf("transfer %s is %s, owner %q: %w", t.ID, t.State, t.Owner, ErrLeaseLost)
	}
	return nil
}

// Renew extends the lease of a held transfer to now+ttl.
func Renew(t *Transfer, a Agent, now time.Time, ttl time.Duration) error {
	if err := Held(t, a); err != nil {
		return err
	}
	t.LeaseExpires = At(now.Add(ttl))
	t.LastUpdate = At(now)
	return nil
}

// Prepare records the sid of the FTS job about to be submitted, and renews
// the lease. The first time, it also records that t owns its destination
// (DestOwnedSince): in the same write, before FTS sees the transfer.
func Prepare(t *Transfer, a Agent, sid string, now time.Time, ttl time.Duration) error {
	if err := Renew(t, a, now, ttl); err != nil {
		return err
	}
	t.SubmitSID = sid
	if t.DestOwnedSince.IsZero() {
		t.DestOwnedSince = At(now)
	}
	return nil
}

// CommitTo moves a held transfer to submitted in job.
func CommitTo(t *Transfer, a Agent, c Commit, job string, now time.Time) error {
	if err := Held(t, a); err != nil {
		return err
	}
	t.Transition(StateSubmitted, now, a.Owner, "")
	t.FTSJob, t.FTSFileID = job, c.FileID
	t.SourcePFN, t.DestPFN = c.SourcePFN, c.DestPFN
	t.LeaseExpires = Time{}
	t.Progress = &Progress{FTSState: "SUBMITTED", Updated: At(now)}
	t.Reason, t.ErrorClass = "", ""
	return nil
}

// ApplyAbort ends the transaction of a held transfer without a job.
func ApplyAbort(t *Transfer, a Agent, ab Abort, p Policy, now time.Time) error {
	if err := Held(t, a); err != nil {
		return err
	}
	p = p.WithDefaults()
	reason := ab.Reason
	switch {
	case ab.NoPenalty || t.KillRequested:
		// a transfer whose kill was requested is not penalised for a
		// submission that did not happen: the next claim ends it killed
		t.Transition(StateNew, now, a.Owner, "released: "+reason)
		t.RetryAfter = Time{}
		if ab.Wait && !t.KillRequested {
			t.RetryAfter = At(now.Add(p.CoolOff))
		}
		if ab.Disown {
			t.DestOwnedSince = Time{}
		}
	default:
		t.Attempts++
		t.Reason = reason
		if ab.Fatal || t.Attempts >= p.MaxAttempts {
			t.Transition(StateFailed, now, a.Owner, failReason(reason, ab.Fatal, t.Attempts))
		} else {
			t.Transition(StateNew, now, a.Owner, reason)
			t.RetryAfter = At(now.Add(p.CoolOff))
		}
		t.ErrorClass = ab.ErrorClass
	}
	clearLease(t)
	t.SubmitSID = ""
	return nil
}

// ApplyTerminal applies an FTS outcome. It reports whether a write is needed:
// false (with a nil error) when t is already in the requested end state.
func ApplyTerminal(t *Transfer, a Agent, o Terminal, p Policy, now time.Time) (bool, error) {
	want := map[Outcome]State{OutcomeDone: StateDone, OutcomeKilled: StateKilled, OutcomeFailed: StateFailed}[o.Outcome]
	if o.Outcome != OutcomeDone && o.Outcome != OutcomeKilled && o.Outcome != OutcomeFailed && o.Outcome != OutcomeLost {
		return false, fmt.Errorf("transfer %s: unknown outcome %q: %w", t.ID, o.Outcome, ErrInvalid)
	}
	if t.State.Terminal() {
		if t.State == want && (o.FTSJob == "" || o.FTSJob == t.FTSJob) {
			return false, nil
		}
		return false, fmt.Errorf("transfer %s is already %s: %w", t.ID, t.State, ErrLeaseLost)
	}
	if o.FTSJob != "" {
		if t.State != StateSubmitted || t.FTSJob != o.FTSJob {
			return false, fmt.Errorf("transfer %s is %s in job %q, not in %s: %w", t.ID, t.State, t.FTSJob, o.FTSJob, ErrLeaseLost)
		}
	} else if err := Held(t, a); err != nil {
		return false, err
	}
	p = p.WithDefaults()
	o.DestCopy.apply(t)
	for _, n := range o.Notes {
		t.History = appendHistory(t.History, Transition{At: At(now), From: t.State, To: t.State, By: a.Owner, Reason: n})
	}
	switch o.Outcome {
	case OutcomeDone:
		// a reason says how it was found done (the file was already at the
		// destination); a finished copy has none
		t.Transition(StateDone, now, a.Owner, o.Reason)
		t.Reason, t.ErrorClass = o.Reason, ""
	case OutcomeKilled:
		t.Transition(StateKilled, now, a.Owner, orDefault(o.Reason, "killed by request"))
	case OutcomeLost:
		// a lost job counts as an attempt, or FTS losing every job of a
		// transfer would have it submitted again without end; one that a
		// stop of aso ended (NoPenalty) does not
		if !o.NoPenalty {
			t.Attempts++
		}
		reason := orDefault(o.Reason, "FTS job "+t.FTSJob+" was lost")
		if o.NoPenalty || t.Attempts < p.MaxAttempts {
			t.Transition(StateNew, now, a.Owner, reason)
			t.RetryAfter = Time{}
			t.FTSJob, t.FTSFileID = "", 0
		} else {
			t.Transition(StateFailed, now, a.Owner, failReason(reason, false, t.Attempts))
		}
	case OutcomeFailed:
		t.Attempts++
		if o.Retryable && t.Attempts < p.MaxAttempts {
			t.Transition(StateNew, now, a.Owner, o.Reason)
			t.RetryAfter = At(now.Add(p.CoolOff))
			t.FTSJob, t.FTSFileID = "", 0
		} else {
			t.Transition(StateFailed, now, a.Owner, failReason(o.Reason, !o.Retryable, t.Attempts))
		}
		t.ErrorClass = o.ErrorClass
	}
	clearLease(t)
	t.SubmitSID = ""
	if t.State != StateNew {
		t.Progress = nil
	}
	return true, nil
}

// ApplyTransient records progress on a submitted transfer, and its FTS file
// ID when the progress carries one (FTS's submit reply has none).
func ApplyTransient(t *Transfer, pr Progress, now time.Time) error {
	if t.State != StateSubmitted {
		return fmt.Errorf("transfer %s is %s, not submitted: %w", t.ID, t.State, ErrLeaseLost)
	}
	pr.Updated = At(now)
	if pr.FileID != 0 {
		t.FTSFileID = pr.FileID
	}
	t.Progress = &pr
	t.LastUpdate = At(now)
	return nil
}

// RequestKillOf applies `aso kill` by by: new -> killed; acquired or
// submitted -> kill_requested, with a history entry that keeps the state
// and says who asked and when. ErrTerminal for a terminal transfer.
func RequestKillOf(t *Transfer, now time.Time, by string) error {
	switch {
	case t.State.Terminal():
		return fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrTerminal)
	case t.State == StateNew:
		t.KillRequested = true
		t.Transition(StateKilled, now, by, "killed by request")
	default:
		t.KillRequested = true
		t.Note(now, by, KillRequestedReason)
		t.LastUpdate = At(now)
	}
	return nil
}

// KillRequestedReason is the reason of the history entry of a kill
// request on an acquired or submitted transfer.
const KillRequestedReason = "kill requested"

// RetryOf applies `aso retry`: a terminal transfer returns to new with its
// attempts reset. ErrNotTerminal for an active transfer.
func RetryOf(t *Transfer, now time.Time, by string) error {
	if !t.State.Terminal() {
		return fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrNotTerminal)
	}
	t.Transition(StateNew, now, by, "retry requested")
	t.Reason, t.ErrorClass = "", ""
	t.Attempts = 0
	t.RetryAfter = Time{}
	t.KillRequested = false
	t.FTSJob, t.FTSFileID, t.SubmitSID = "", 0, ""
	t.SourcePFN, t.DestPFN = "", ""
	t.Progress = nil
	t.SupersededBy = ""
	clearLease(t)
	return nil
}

func clearLease(t *Transfer) {
	t.Owner = ""
	t.LeaseExpires = Time{}
}

func failReason(reason string, fatal bool, attempts int) string {
	if fatal {
		return reason
	}
	return fmt.Sprintf("%s (after %d attempts)", reason, attempts)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
