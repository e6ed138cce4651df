package couch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// maxClaimRounds bounds the rounds (candidates read, claimed) one
// NewTransfers call makes to fill its limit when candidates are skipped
// (dependencies waiting, invalid documents, claims lost to another agent).
const maxClaimRounds = 4

// maxRowsPage bounds the rows of one page of the queue.
const maxRowsPage = 50000

// A claim from the head of the queue is followed, for state.StaleClaimWindow,
// by claims that go on down the queue from where the last one stopped,
// reading the view as the server last indexed it (update=false) rather
// than waiting for it to index the writes since: the claims and commits of
// the batches before, which each claim's view query otherwise indexes
// again while a backlog drains. A claim whose stale rows hold, or yield,
// fewer due transfers than it needs reads the head afresh at once, so that
// a transfer queued or released meanwhile, or of a higher priority, waits
// at most the window (or, after a claim that saw the end of the queue, the
// caller's next claim, which reads the head).

// claimCursor is where the next claim of the store goes on down the queue.
type claimCursor struct {
	mu    sync.Mutex
	key   json.RawMessage // claim key of the last row a claim got past; nil: read the head
	until time.Time       // when the last read of the head is too old to go on from
}

// start returns where a claim at now begins: after key, on the view as it
// is (stale), or at the head of the queue, on an up-to-date view.
func (c *claimCursor) start(now time.Time) (after json.RawMessage, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == nil || !now.Before(c.until) {
		return nil, false
	}
	return c.key, true
}

// recent reports whether a claim read the head of the queue, with the view
// brought up to date, less than state.StaleClaimWindow before now: until
// then the monitor's listings too read the view as it is (see ActiveJobs).
func (c *claimCursor) recent(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return now.Before(c.until)
}

// set records where the next claim goes on (nil: from the head); head
// reports that this claim read the head, at now.
func (c *claimCursor) set(key json.RawMessage, head bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key = key
	if head {
		c.until = now.Add(state.StaleClaimWindow)
	}
}

// NewTransfers claims up to r.Limit eligible transfers of the agent's user
// (see state.AgentStore). Each round reads the due candidates from the
// queue rows of the view (without documents), their documents in one bulk
// read, at most one bulk read of dependencies and one _bulk_docs (plus one
// re-read if claims conflicted); a claim that loses a race is skipped and
// the next round goes on further down the queue. Within
// state.StaleClaimWindow of a claim from the head, a claim starts where the
// last one stopped, on the view as it is. With a link cap, the candidates
// of one round take turns by link, and those of links at the cap are
// passed over (passOver).
func (s *Store) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	out := state.Claimed{Transfers: []state.Transfer{}}
	limit := r.Limit
	if limit <= 0 {
		return out, nil
	}
	a, now := s.cfg.Agent, s.now()
	budget := state.NewLinkBudget(r)
	after, stale := s.cursor.start(now)
	head := !stale
	for round := 0; round < maxClaimRounds && len(out.Transfers) < limit; round++ {
		need := limit - len(out.Transfers)
		want := need + need/8 + 4 // a little extra in case some are skipped
		cands, next, last, err := s.dueCandidates(ctx, a.User, now, after, want, stale)
		if err == nil && stale && len(cands) < need {
			// the view as last indexed has too few: read the head afresh
			stale, head = false, true
			cands, next, last, err = s.dueCandidates(ctx, a.User, now, nil, want, false)
		}
		if err != nil {
			return state.Claimed{}, fmt.Errorf("couch: new transfers: %w", err)
		}
		got, stop, passed, err := s.claimCandidates(ctx, cands, need, r, budget)
		if err != nil {
			return state.Claimed{}, fmt.Errorf("couch: new transfers: %w", err)
		}
		out.Transfers = append(out.Transfers, got.Transfers...)
		out.Settled = append(out.Settled, got.Settled...)
		out.Contended += got.Contended
		if stale && len(got.Transfers)+passed < need && len(out.Transfers) < limit {
			// rows due on the view as last indexed were not (killed,
			// deleted, settled): go on from the head, afresh
			stale, head, after = false, true, nil
			continue
		}
		if stop > 0 {
			next = cands[stop-1].key // the rest stay candidates of the next claim
		}
		after, out.End = next, last && stop == 0
		if last {
			break
		}
	}
	if out.End {
		after = nil // the next claim reads the head
	}
	if head {
		s.written.indexed(now)
	}
	s.cursor.set(after, head, now)
	return out, nil
}

// candidate is a transfer due in the queue, with its claim key.
type candidate struct {
	id  string
	key json.RawMessage
}

// dueCandidates reads user's queue after the claim key after (nil: from
// its head) and returns up to want transfers due at now, in claim order,
// the claim key of the last row it looked at, and whether it reached the
// end of the queue. Rows carry no documents, so passing over transfers
// that are not due (in cool-off, or under a live lease) costs little;
// pages grow while they hold too few due transfers. With stale, the view
// is read as the server last indexed it.
func (s *Store) dueCandidates(ctx context.Context, user string, now time.Time, after json.RawMessage, want int, stale bool) ([]candidate, json.RawMessage, bool, error) {
	var cands []candidate
	page := min(max(2*want, 64), maxRowsPage)
	for {
		rows, err := claimRows(ctx, s.db, user, after, page, false, stale)
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
				cands = append(cands, candidate{r.ID, k})
				if len(cands) == want {
					return cands, after, false, nil
				}
			}
		}
		if len(rows) < page || !moved {
			return cands, after, true, nil
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

// claimCandidates reads the documents of cands and claims up to need of
// them (see claimFrom); stop is the number of candidates it got to before
// it had need, 0 if it went through them all; passed is how many it passed
// over for their links' cap.
func (s *Store) claimCandidates(ctx context.Context, cands []candidate, need int, r state.ClaimRequest, budget *state.LinkBudget) (got state.Claimed, stop, passed int, err error) {
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	docs, err := s.rv.readKeys(ctx, ids)
	if err != nil {
		return state.Claimed{}, 0, 0, err
	}
	raws := make([]json.RawMessage, 0, len(ids))
	for _, id := range ids {
		if raw, ok := docs[id]; ok {
			raws = append(raws, raw)
		}
	}
	got, stopID, passed, err := s.claimFrom(ctx, raws, need, r, budget)
	if err != nil || stopID == "" {
		return got, 0, passed, err
	}
	for i, c := range cands {
		if c.id == stopID {
			return got, i, passed, nil
		}
	}
	return got, 0, passed, nil
}

// claimKind says what a claim's write does to one candidate.
type claimKind uint8

const (
	kindClaim    claimKind = iota // claimed for the agent
	kindSettle                    // ended: it can never run (dependency, kill request)
	kindInvalid                   // moved to failed: the document does not validate
	kindPassOver                  // left new, moved to the back of the queue: its link is at the cap
)

// claimFrom claims up to need of the candidate documents, in their order
// (in state.SpreadOrder when r has a link cap), settling those that can
// never run, and returns what it did and the ID of the first candidate it
// did not get to ("" if none). Documents that do not decode are moved to
// failed in the same write, with the reason naming the field (see
// quarantine). A candidate of a link at its cap is passed over (passOver).
func (s *Store) claimFrom(ctx context.Context, docs []json.RawMessage, need int, r state.ClaimRequest, budget *state.LinkBudget) (state.Claimed, string, int, error) {
	a, now := s.cfg.Agent, s.now()
	cands := make([]state.Transfer, 0, len(docs))
	var items []item
	var kinds []claimKind
	for _, raw := range docs {
		t, err := decode(raw)
		if err == nil {
			cands = append(cands, t)
		} else if it, ok := quarantine(raw, err, a, now); ok {
			items = append(items, it)
			kinds = append(kinds, kindInvalid)
		}
	}
	deps, err := s.depGraph(ctx, cands)
	if err != nil {
		return state.Claimed{}, "", 0, err
	}
	if r.MaxPerLink > 0 {
		cands = spread(cands)
	}
	nClaims, nPassed, stop := 0, 0, ""
	for i := range cands {
		if nClaims == need {
			stop = cands[i].ID
			break
		}
		t := &cands[i]
		probe := cloneTransfer(t)
		switch {
		case state.SettleUnrunnable(probe, deps, now, a.Owner):
			items, kinds = append(items, s.settleItem(t, deps, now)), append(kinds, kindSettle)
		case !state.ReadyToClaim(t, deps, now):
		case t.SubmitSID == "" && !budget.Take(t.Link()):
			// a transfer with a sid may already be in FTS: it is claimed
			// whatever the cap, to be looked up by its sid
			if t.State == state.StateNew {
				items, kinds = append(items, passOver(t, now, nPassed)), append(kinds, kindPassOver)
				nPassed++
			}
		default:
			items, kinds = append(items, s.claimItem(t, now)), append(kinds, kindClaim)
			nClaims++
		}
	}
	// A conflicting claim is re-read once (no retry): it is ours if the
	// write landed though its answer was lost, otherwise skipped.
	res, err := s.w.mutate(ctx, items, report)
	if err != nil {
		return state.Claimed{}, "", 0, err
	}
	return s.claimedOf(items, kinds, res, now), stop, nPassed, nil
}

// claimItem is the claim of t for the agent.
func (s *Store) claimItem(t *state.Transfer, now time.Time) item {
	a, ttl := s.cfg.Agent, s.policy.LeaseTTL
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		return true, state.Claim(t, a, now, ttl)
	}}
}

// settleItem ends t, which can never run (state.SettleUnrunnable).
func (s *Store) settleItem(t *state.Transfer, deps state.Deps, now time.Time) item {
	a := s.cfg.Agent
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		if !state.Claimable(t, a.User, now) {
			return false, fmt.Errorf("transfer %s: %w", t.ID, state.ErrLeaseLost)
		}
		return state.SettleUnrunnable(t, deps, now, a.Owner), nil
	}}
}

// passOver moves t, a new transfer of a link at its cap, to the back of
// the queue: its last_update becomes now, plus n microseconds for the n-th
// passed over in this call, so that those passed over keep their order.
// Without the move the next claims would read the same head of the queue
// again and again while other links wait behind it.
func passOver(t *state.Transfer, now time.Time, n int) item {
	at := state.At(now.Add(time.Duration(n) * time.Microsecond))
	return item{id: t.ID, t: t, rule: func(t *state.Transfer) (bool, error) {
		if t.State != state.StateNew || t.RetryAfter.After(now) {
			return false, fmt.Errorf("transfer %s: %w", t.ID, state.ErrLeaseLost)
		}
		t.LastUpdate = at
		return true, nil
	}}
}

// claimedOf is what the write of items (of kinds) did, from its results.
func (s *Store) claimedOf(items []item, kinds []claimKind, res []state.Result, now time.Time) state.Claimed {
	a, ttl := s.cfg.Agent, s.policy.LeaseTTL
	var out state.Claimed
	for k, r := range res {
		if r.Err != nil {
			// refused, or claimed or settled by another agent; a claim
			// whose write lost or was not confirmed may still be due
			if kinds[k] == kindClaim && (errors.Is(r.Err, state.ErrConflict) || errors.Is(r.Err, state.ErrNotFound)) {
				out.Contended++
			}
			continue
		}
		t := cloneTransfer(items[k].t)
		switch kinds[k] {
		case kindClaim:
			_ = state.Claim(t, a, now, ttl)
			t.Rev = r.Rev
			out.Transfers = append(out.Transfers, *t)
		case kindSettle, kindInvalid:
			_, _ = items[k].rule(t)
			t.Rev = r.Rev
			out.Settled = append(out.Settled, *t)
		}
	}
	return out
}

// spread puts cands, in claim order, in state.SpreadOrder.
func spread(cands []state.Transfer) []state.Transfer {
	order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].Priority }, func(i int) string { return cands[i].Link() })
	out := make([]state.Transfer, len(order))
	for i, k := range order {
		out[i] = cands[k]
	}
	return out
}
