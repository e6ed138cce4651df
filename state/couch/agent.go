package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// maxClaimRounds bounds the rounds (candidates read, claimed) one
// NewTransfers call makes to fill its limit when candidates are skipped
// (dependencies waiting, invalid documents, claims lost to another agent).
const maxClaimRounds = 4

// maxRowsPage bounds the rows of one page of the queue.
const maxRowsPage = 50000

// NewTransfers claims up to limit eligible transfers of the agent's user
// (see state.TransferState). Each round reads the due candidates from the
// queue rows of the view (without documents), their documents in one bulk
// read, at most one bulk read of dependencies and one _bulk_docs (plus one
// re-read if claims conflicted); a claim that loses a race is skipped and
// the next round goes on further down the queue.
func (s *Store) NewTransfers(ctx context.Context, limit int) ([]state.Transfer, error) {
	out := []state.Transfer{}
	if limit <= 0 {
		return out, nil
	}
	a, now := s.cfg.Agent, s.now()
	var after json.RawMessage
	for round := 0; round < maxClaimRounds && len(out) < limit; round++ {
		need := limit - len(out)
		ids, next, end, err := s.dueCandidates(ctx, a.User, now, after, need+need/8+4) // a little extra in case some are skipped
		if err != nil {
			return nil, fmt.Errorf("couch: new transfers: %w", err)
		}
		docs, err := s.readKeys(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("couch: new transfers: %w", err)
		}
		cands := make([]json.RawMessage, 0, len(ids))
		for _, id := range ids {
			if raw, ok := docs[id]; ok {
				cands = append(cands, raw)
			}
		}
		got, err := s.claimFrom(ctx, cands, need)
		if err != nil {
			return nil, fmt.Errorf("couch: new transfers: %w", err)
		}
		out = append(out, got...)
		s.remember(got)
		if end {
			break // the queue is exhausted
		}
		after = next
	}
	return out, nil
}

// dueCandidates reads user's queue after the claim key after (nil: from
// its head) and returns the IDs of up to want transfers due at now, in
// claim order, the claim key of the last row it looked at, and whether it
// reached the end of the queue. Rows carry no documents, so passing over
// transfers that are not due (in cool-off, or under a live lease) costs
// little; pages grow while they hold too few due transfers.
func (s *Store) dueCandidates(ctx context.Context, user string, now time.Time, after json.RawMessage, want int) ([]string, json.RawMessage, bool, error) {
	var ids []string
	page := min(max(2*want, 64), maxRowsPage)
	for {
		rows, err := s.claimRows(ctx, user, after, page, false)
		if err != nil {
			return nil, nil, false, err
		}
		moved := false
		for _, r := range rows {
			k, ok := claimKeyOf(r)
			if !ok {
				continue // not a queue row
			}
			after, moved = k, true
			if due(r.Value, now) {
				ids = append(ids, r.ID)
				if len(ids) == want {
					return ids, after, false, nil
				}
			}
		}
		if len(rows) < page || !moved {
			return ids, after, true, nil
		}
		page = min(2*page, maxRowsPage)
	}
}

// due reports whether a transfer whose queue row has the value v (the
// time it may be claimed, in microseconds since the epoch) may be claimed
// at now. A value that does not parse is judged on the document.
func due(v json.RawMessage, now time.Time) bool {
	var us float64
	if json.Unmarshal(v, &us) != nil {
		return true
	}
	return us <= float64(now.UnixMicro())
}

// claimFrom claims up to need of the candidate documents, in their order,
// settling those that can never run, and returns the claimed transfers.
// Documents that do not decode are moved to failed in the same write, with
// the reason naming the field (see quarantine).
func (s *Store) claimFrom(ctx context.Context, docs []json.RawMessage, need int) ([]state.Transfer, error) {
	a, now, ttl := s.cfg.Agent, s.now(), s.policy.LeaseTTL
	cands := make([]state.Transfer, 0, len(docs))
	var items []item
	var claims []bool
	for _, raw := range docs {
		t, err := decode(raw)
		if err == nil {
			cands = append(cands, t)
		} else if it, ok := quarantine(raw, err, a, now); ok {
			items = append(items, it)
			claims = append(claims, false)
		}
	}
	deps, err := s.depGraph(ctx, cands)
	if err != nil {
		return nil, err
	}
	nClaims := 0
	for i := range cands {
		if nClaims == need {
			break
		}
		t := &cands[i]
		probe := cloneTransfer(t)
		if state.SettleUnrunnable(probe, deps, now, a.Owner) {
			items = append(items, item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
				if !state.Claimable(t, a.User, now) {
					return false, fmt.Errorf("transfer %s: %w", t.ID, state.ErrLeaseLost)
				}
				return state.SettleUnrunnable(t, deps, now, a.Owner), nil
			}})
			claims = append(claims, false)
			continue
		}
		if !state.ReadyToClaim(t, deps, now) {
			continue
		}
		items = append(items, item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
			return true, state.Claim(t, a, now, ttl)
		}})
		claims = append(claims, true)
		nClaims++
	}
	// A conflicting claim is re-read once (no retry): it is ours if the
	// write landed though its answer was lost, otherwise skipped.
	res, err := s.mutate(ctx, items, report)
	if err != nil {
		return nil, err
	}
	var got []state.Transfer
	for k, r := range res {
		switch {
		case r.Err != nil:
			// refused, or claimed or settled by another agent
		case claims[k]:
			t := cloneTransfer(items[k].t)
			_ = state.Claim(t, a, now, ttl)
			t.Rev = r.Rev
			got = append(got, *t)
		}
	}
	return got, nil
}

// InvalidReasonPrefix starts the reason of a transfer the agent moved to
// failed because its document does not validate; validate_doc_update lets
// exactly this move through for a document it would refuse otherwise.
const InvalidReasonPrefix = "invalid document: "

// quarantine returns the item that moves a queued transfer document that
// does not validate (err) to failed, keeping every field as it is (see
// salvage), so that it is never left waiting in silence.
func quarantine(raw json.RawMessage, err error, a state.Agent, now time.Time) (item, bool) {
	t, ok := salvage(raw)
	if !ok || (t.State != state.StateNew && t.State != state.StateAcquired) {
		return item{}, false
	}
	for _, f := range []string{"state", "reason", "last_update", "history"} {
		delete(t.Extra, f) // aso's own fields, written anew below
	}
	reason := InvalidReasonPrefix + err.Error()
	return item{id: t.ID, t: &t, rule: func(t *state.Transfer) (bool, error) {
		t.Transition(state.StateFailed, now, a.Owner, reason)
		return true, nil
	}}, true
}

// held builds items whose rule needs the transfer held by the agent.
func (s *Store) heldItems(ts []state.Transfer, f func(i int, t *state.Transfer) error) []item {
	items := make([]item, len(ts))
	for i := range ts {
		items[i] = item{id: ts[i].ID, t: &ts[i], rule: func(t *state.Transfer) (bool, error) {
			return true, f(i, t)
		}}
	}
	return items
}

// PrepareSubmit writes submit_sid and renews the lease (one _bulk_docs).
func (s *Store) PrepareSubmit(ctx context.Context, transfers []state.Transfer, sid string) ([]state.Result, error) {
	return state.PrepareOne(ctx, s, transfers, sid)
}

// PrepareSubmits is PrepareSubmit of several jobs in one _bulk_docs.
func (s *Store) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) ([][]state.Result, error) {
	a, now, ttl := s.cfg.Agent, s.now(), s.policy.LeaseTTL
	var ts []state.Transfer
	var of []*state.PrepareJob
	sizes := make([]int, len(jobs))
	for k := range jobs {
		sizes[k] = len(jobs[k].Transfers)
		ts = append(ts, jobs[k].Transfers...)
		for range jobs[k].Transfers {
			of = append(of, &jobs[k])
		}
	}
	items := s.heldItems(ts, func(i int, t *state.Transfer) error { return of[i].Apply(t, a, now, ttl) })
	res, err := s.wrap("prepare submit")(s.mutate(ctx, items, reapply))
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// RenewLeases extends the leases of claimed transfers (one _bulk_docs).
func (s *Store) RenewLeases(ctx context.Context, transfers []state.Transfer) ([]state.Result, error) {
	a, now, ttl := s.cfg.Agent, s.now(), s.policy.LeaseTTL
	items := s.heldItems(transfers, func(_ int, t *state.Transfer) error { return state.Renew(t, a, now, ttl) })
	return s.wrap("renew leases")(s.mutate(ctx, items, reapply))
}

// SetTransferID commits claimed transfers to FTS job jobID (one _bulk_docs).
func (s *Store) SetTransferID(ctx context.Context, commits []state.Commit, jobID string) ([]state.Result, error) {
	return state.CommitOne(ctx, s, commits, jobID)
}

// SetTransferIDs is SetTransferID of several jobs in one _bulk_docs.
func (s *Store) SetTransferIDs(ctx context.Context, jobs []state.CommitJob) ([][]state.Result, error) {
	a, now := s.cfg.Agent, s.now()
	var ts []state.Transfer
	var commits []*state.Commit
	var jobIDs []string
	sizes := make([]int, len(jobs))
	for k, j := range jobs {
		sizes[k] = len(j.Commits)
		for i := range j.Commits {
			ts = append(ts, j.Commits[i].Transfer)
			commits = append(commits, &j.Commits[i])
			jobIDs = append(jobIDs, j.JobID)
		}
	}
	items := s.heldItems(ts, func(i int, t *state.Transfer) error { return state.CommitTo(t, a, *commits[i], jobIDs[i], now) })
	res, err := s.wrap("set transfer id")(s.mutate(ctx, items, reapply))
	if err != nil {
		return nil, err
	}
	return state.SplitResults(res, sizes), nil
}

// AbortTransfers ends transactions without a job (one _bulk_docs).
func (s *Store) AbortTransfers(ctx context.Context, aborts []state.Abort) ([]state.Result, error) {
	a, now, p := s.cfg.Agent, s.now(), s.policy
	ts := make([]state.Transfer, len(aborts))
	for i := range aborts {
		ts[i] = aborts[i].Transfer
	}
	items := s.heldItems(ts, func(i int, t *state.Transfer) error { return state.ApplyAbort(t, a, aborts[i], p, now) })
	return s.wrap("abort transfers")(s.settled(s.mutate(ctx, items, reapply)))
}

// SetTransientState records progress (one _bulk_docs; a conflict is
// reported, never retried).
func (s *Store) SetTransientState(ctx context.Context, transients []state.Transient) ([]state.Result, error) {
	now := s.now()
	items := make([]item, len(transients))
	for i := range transients {
		pr := transients[i].Progress
		items[i] = item{id: transients[i].Transfer.ID, t: &transients[i].Transfer, rule: func(t *state.Transfer) (bool, error) {
			return true, state.ApplyTransient(t, pr, now)
		}}
	}
	return s.wrap("set transient state")(s.mutate(ctx, items, report))
}

// SetTerminalState persists FTS outcomes (one _bulk_docs, plus re-reads on
// conflicts).
func (s *Store) SetTerminalState(ctx context.Context, outcomes []state.Terminal) ([]state.Result, error) {
	a, now, p := s.cfg.Agent, s.now(), s.policy
	items := make([]item, len(outcomes))
	for i := range outcomes {
		o := outcomes[i]
		items[i] = item{id: o.Transfer.ID, t: &outcomes[i].Transfer, rule: func(t *state.Transfer) (bool, error) {
			return state.ApplyTerminal(t, a, o, p, now)
		}}
	}
	return s.wrap("set terminal state")(s.settled(s.mutate(ctx, items, reapply)))
}

// wrap adds the call's name to a whole-call error.
func (s *Store) wrap(call string) func([]state.Result, error) ([]state.Result, error) {
	return func(r []state.Result, err error) ([]state.Result, error) {
		if err != nil {
			return nil, fmt.Errorf("couch: %s: %w", call, err)
		}
		return r, nil
	}
}
