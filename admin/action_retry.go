package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/verify"
)

// Retry is `aso retry`: ended transfers go back to new, their attempts
// reset. Its selection takes the failed transfers.
func Retry() *Action {
	a := &Action{Verb: "retry", Effect: "queued again as new, attempts reset", States: []state.State{state.StateFailed},
		labels: labels{done: "queued again", skipped: "not terminal", past: "retried"}}
	a.would, a.batch = retryWould, a.retry
	return a
}

// RetryVerified is `aso retry --verified missing` (or differs): the
// ended transfers whose last verification found their file so, each
// queued again only when v finds its source still there.
func RetryVerified(result string, v *verify.Verifier) (*Action, error) {
	switch state.VerifyResult(result) {
	case state.VerifyMissing, state.VerifyDiffers:
	default:
		return nil, usagef("--verified %q: retry takes missing or differs: a file present or unreadable at its destination is not copied again", result)
	}
	a := Retry()
	a.States = []state.State{state.StateDone, state.StateFailed, state.StateKilled}
	a.Effect = "queued again as new, attempts reset, when the source still exists (gfal-stat)"
	a.batch = func(ctx context.Context, st state.Store, _ []string, ts []state.Transfer) error {
		return a.retryVerified(ctx, st, v, ts)
	}
	return a, nil
}

// retryWould says what a retry would do to t.
func retryWould(t *state.Transfer) (Outcome, bool) {
	if !t.State.Terminal() {
		return Outcome{Outcome: "not_terminal", text: "not terminal, nothing to retry"}, false
	}
	return Outcome{Outcome: "would_queue_again"}, true
}

// retry retries ids and reports each.
func (a *Action) retry(ctx context.Context, st state.Store, ids []string, _ []state.Transfer) error {
	if len(ids) == 0 {
		return nil
	}
	res, err := st.Retry(ctx, ids)
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	c := &a.Tally
	a.results(ids, res, func(_ string, err error) (Outcome, *int) {
		switch {
		case err == nil:
			return Outcome{Outcome: "queued_again", State: string(state.StateNew)}, &c.Done
		case errors.Is(err, state.ErrNotFound):
			return Outcome{Outcome: "not_found"}, &c.NotFound
		case errors.Is(err, state.ErrNotTerminal):
			return Outcome{Outcome: "not_terminal", text: "not terminal, nothing to retry"}, &c.Skipped
		}
		return Outcome{Outcome: "error", Detail: err.Error(), text: "error: " + err.Error()}, &c.Failed
	})
	return nil
}

// retryVerified checks the sources of ts and retries those that exist.
// The others are reported not queued, and their verification's history
// entry says why, in one write for the batch.
func (a *Action) retryVerified(ctx context.Context, st state.Store, v *verify.Verifier, ts []state.Transfer) error {
	var retry []string
	var notes []state.Verification
	for i, s := range v.Sources(ctx, ts) {
		t := &ts[i]
		last, ok := t.LastVerification()
		if s.Exists || !ok {
			retry = append(retry, s.ID)
			continue
		}
		notes = append(notes, state.Verification{ID: t.ID, Result: last.Verified,
			Detail: verifiedDetail(last) + notQueued + s.Reason})
		a.line(Outcome{ID: t.ID, Outcome: "not_queued", State: string(t.State), Detail: s.Reason, text: "not queued again: " + s.Reason}, &a.Tally.Skipped)
	}
	if len(notes) > 0 {
		res, err := st.RecordVerifications(ctx, notes)
		if err != nil {
			return fmt.Errorf("record why transfers were not queued again: %w", err)
		}
		for _, r := range res {
			if r.Err != nil && a.Warn != nil {
				a.Warn(r.ID, r.Err)
			}
		}
	}
	return a.retry(ctx, st, retry, nil)
}

// notQueued joins a verification's detail and why its transfer was not
// queued again.
const notQueued = "; not queued again: "

// verifiedDetail is the detail of a verification's history entry, without
// what an earlier retry added.
func verifiedDetail(e state.Transition) string {
	d := strings.TrimPrefix(e.Reason, state.VerifyReasonPrefix+string(e.Verified))
	d = strings.TrimPrefix(d, ": ")
	d, _, _ = strings.Cut(d, notQueued)
	return d
}
