package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/verify"
)

// retryVerified makes c a retry of the transfers a verification found
// missing or different (--verified): every ended state is selected, and
// a transfer is queued again only when its source still exists.
func retryVerified(c *idCommand, o *RetryOptions, g *Globals) error {
	switch state.VerifyResult(o.Select.Verified) {
	case state.VerifyMissing, state.VerifyDiffers:
	default:
		return usagef("--verified %q: retry takes missing or differs: a file present or unreadable at its destination is not copied again", o.Select.Verified)
	}
	c.states = []state.State{state.StateDone, state.StateFailed, state.StateKilled}
	c.effect = "queued again as new, attempts reset, when the source still exists (gfal-stat)"
	in := &srm.Inspector{Timeout: srm.DefaultTimeout, Proxy: rmProxy("", g), CertDir: g.getenv("X509_CERT_DIR")}
	v := &verify.Verifier{Inspector: in}
	c.batch = func(ctx context.Context, st state.Store, ids []string, rep *idReport) error {
		return retryVerifiedBatch(ctx, st, v, ids, rep)
	}
	return nil
}

// retryVerifiedBatch checks the sources of ids and retries those that
// exist. The others are reported not queued, and their verification's
// history entry says why, in one write for the batch.
func retryVerifiedBatch(ctx context.Context, st state.Store, v *verify.Verifier, ids []string, rep *idReport) error {
	if len(ids) == 0 {
		return nil
	}
	ts, err := st.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		return fmt.Errorf("read transfers: %w", err)
	}
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
		rep.line(IDOutcome{ID: t.ID, Outcome: "not_queued", State: string(t.State), Detail: s.Reason, text: "not queued again: " + s.Reason}, &rep.tally.skipped)
	}
	if len(notes) > 0 {
		res, err := st.RecordVerifications(ctx, notes)
		if err != nil {
			return fmt.Errorf("record why transfers were not queued again: %w", err)
		}
		for _, r := range res {
			if r.Err != nil {
				rep.g.Log.WithError(r.Err).WithField(FieldTransfer, r.ID).Warn("could not record why the transfer was not queued again")
			}
		}
	}
	return retryBatch(ctx, st, retry, rep)
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
