package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// claimer claims transfers of the agent's user from the queue rows of the
// work view: due candidates with their documents (see dueCandidates),
// settled or claimed within the link cap in one revision-checked write. It owns the
// cursor where the next claim goes on down the queue, and takes back the
// claims of the user's other agents for the holder of the run lock.
type claimer struct {
	db      *db
	rv      *resolver
	w       *writer
	written *written // told when a claim brought the view up to date
	locks   *locker
	agent   state.Agent
	policy  state.Policy
	now     func() time.Time
	cursor  claimCursor
}

// maxClaimRounds bounds the rounds (candidates read, claimed) one
// NewTransfers call makes to fill its limit when candidates are skipped
// (dependencies waiting, invalid documents, claims lost to another agent).
const maxClaimRounds = 4

// maxRowsPage bounds the rows of one page of the queue.
const maxRowsPage = 50000

// NewTransfers claims up to r.Limit eligible transfers of the agent's user
// (see state.AgentStore). Each round reads the due candidates from the
// queue rows of the view, with their documents (dueCandidates), at most
// one bulk read of the documents the rows did not bring and one of
// dependencies, and one _bulk_docs (plus one re-read if claims
// conflicted); a claim that loses a race is skipped and
// the next round goes on further down the queue. Within
// state.StaleClaimWindow of a claim from the head, a claim starts where the
// last one stopped, on the view as it is. With a link cap, the candidates
// of one round take turns by link, and those of links at the cap are
// passed over (passOver).
func (c *claimer) NewTransfers(ctx context.Context, r state.ClaimRequest) (state.Claimed, error) {
	out := state.Claimed{Transfers: []state.Transfer{}}
	limit := r.Limit
	if limit <= 0 {
		return out, nil
	}
	a, now := c.agent, c.now()
	budget := state.NewLinkBudget(r)
	after, stale := c.cursor.start(now)
	head := !stale
	for round := 0; round < maxClaimRounds && len(out.Transfers) < limit; round++ {
		need := limit - len(out.Transfers)
		want := need + need/8 + 4 // a little extra in case some are skipped
		cands, next, last, err := c.dueCandidates(ctx, a.User, now, after, want, stale)
		if err == nil && stale && len(cands) < need {
			// the view as last indexed has too few: read the head afresh
			stale, head = false, true
			cands, next, last, err = c.dueCandidates(ctx, a.User, now, nil, want, false)
		}
		if err != nil {
			return state.Claimed{}, fmt.Errorf("couch: new transfers: %w", err)
		}
		got, stop, passed, err := c.claimCandidates(ctx, cands, need, r, budget)
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
		c.written.indexed(now)
	}
	c.cursor.set(after, head, now)
	return out, nil
}

// candidate is a transfer due in the queue, with its claim key and its
// document if its row brought it.
type candidate struct {
	id  string
	key json.RawMessage
	doc json.RawMessage
}

// dueCandidates reads user's queue after the claim key after (nil: from
// its head) and returns up to want transfers due at now, in claim order,
// the claim key of the last row it looked at, and whether it reached the
// end of the queue. On a single node the first page, of want rows (64 at
// least), brings the documents (include_docs, with their conflicts), so
// that a queue of due transfers is claimed without reading them by ID;
// the pages after it carry no documents, so passing over transfers that
// are not due (in cool-off, or under a live lease) costs little, and grow
// while they hold too few due transfers. A cluster reads the documents by ID, from a
// quorum of replicas, as a view reads them from one. With stale, the view
// is read as the server last indexed it.
func (c *claimer) dueCandidates(ctx context.Context, user string, now time.Time, after json.RawMessage, want int, stale bool) ([]candidate, json.RawMessage, bool, error) {
	var cands []candidate
	docs := c.db.readQuorum == 0
	page := min(max(2*want, 64), maxRowsPage)
	if docs {
		page = min(max(want, 64), maxRowsPage)
	}
	for {
		rows, err := claimRows(ctx, c.db, user, after, page, docs, stale)
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
				cands = append(cands, candidate{r.ID, k, r.Doc})
				if len(cands) == want {
					return cands, after, false, nil
				}
			}
		}
		if len(rows) < page || !moved {
			return cands, after, true, nil
		}
		docs, page = false, min(max(2*page, 64), maxRowsPage)
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

// claimCandidates reads the documents of cands their rows did not bring
// and claims up to need of them (see claimFrom); stop is the number of
// candidates it got to before it had need, 0 if it went through them all;
// passed is how many it passed over for their links' cap.
func (c *claimer) claimCandidates(ctx context.Context, cands []candidate, need int, r state.ClaimRequest, budget *state.LinkBudget) (got state.Claimed, stop, passed int, err error) {
	var missing []string
	have := make(map[string]json.RawMessage, len(cands))
	for _, c := range cands {
		if c.doc != nil {
			have[c.id] = c.doc
		} else {
			missing = append(missing, c.id)
		}
	}
	docs, err := c.rv.readKeysBeside(ctx, missing, have)
	if err != nil {
		return state.Claimed{}, 0, 0, err
	}
	raws := make([]json.RawMessage, 0, len(cands))
	for _, c := range cands {
		if raw, ok := docs[c.id]; ok {
			raws = append(raws, raw)
		}
	}
	got, stopID, passed, err := c.claimFrom(ctx, raws, need, r, budget)
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

// claimFrom claims up to need of the candidate documents, in their order
// (in state.SpreadOrder when r has a link cap), settling those that can
// never run, and returns what it did and the ID of the first candidate it
// did not get to ("" if none). Documents that do not decode are moved to
// failed in the same write, with the reason naming the field (see
// quarantine). A candidate of a link at its cap is passed over (passOver).
func (c *claimer) claimFrom(ctx context.Context, docs []json.RawMessage, need int, r state.ClaimRequest, budget *state.LinkBudget) (state.Claimed, string, int, error) {
	a, now := c.agent, c.now()
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
	deps, err := c.depGraph(ctx, cands)
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
			items, kinds = append(items, c.settleItem(t, deps, now)), append(kinds, kindSettle)
		case !state.ReadyToClaim(t, deps, now):
		case t.SubmitSID == "" && !budget.Take(t.Link()):
			// a transfer with a sid may already be in FTS: it is claimed
			// whatever the cap, to be looked up by its sid
			if t.State == state.StateNew {
				items, kinds = append(items, passOver(t, now, nPassed)), append(kinds, kindPassOver)
				nPassed++
			}
		default:
			items, kinds = append(items, c.claimItem(t, now)), append(kinds, kindClaim)
			nClaims++
		}
	}
	// A conflicting claim is re-read once (no retry): it is ours if the
	// write landed though its answer was lost, otherwise skipped.
	res, err := c.w.mutate(ctx, items, report)
	if err != nil {
		return state.Claimed{}, "", 0, err
	}
	return c.claimedOf(items, kinds, res, now), stop, nPassed, nil
}
