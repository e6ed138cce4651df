package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Summary counts transfers by state, link and user. It pages through
// _all_docs (an operator's command, not part of the agent's loop), which is
// also how it finds the documents that are not valid transfers.
func (a *admin) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	now := a.now()
	o = o.WithDefaults()
	sum := state.Summary{
		ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
		ByErrorClass: map[string]int{},
		Stale:        []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{},
	}
	// a user's transfers not terminal in the scan are read again by ID, from
	// a quorum: a scan of a cluster reads one copy of each shard, which may
	// not show an agent's last writes yet (its own summary after a run)
	var unsettled []state.Transfer
	err := a.db.scanAll(ctx, func(raw json.RawMessage) {
		_, kind := classify(raw)
		if kind == kindOther {
			return
		}
		if bytes.Contains(raw, []byte(`"_conflicts"`)) && len(conflictsOf(raw)) > 0 {
			if len(pendingConflicts(raw)) > 0 {
				sum.Conflicted++
			} else {
				sum.Superseded++
			}
		}
		t, err := decode(raw)
		if kind == kindUnknown || err != nil {
			sum.Invalid = append(sum.Invalid, invalidDoc(raw, err))
			return
		}
		if o.User != "" && t.User != o.User {
			return
		}
		if o.User != "" && !t.State.Terminal() {
			unsettled = append(unsettled, t) // counted as read by ID, below
			return
		}
		count(&sum, &t, now, o)
	})
	if err == nil {
		err = a.countByID(ctx, &sum, unsettled, now, o)
	}
	if err != nil {
		return state.Summary{}, fmt.Errorf("couch: summary: %w", err)
	}
	byUpdate := func(ts []state.Transfer) {
		sort.Slice(ts, func(i, j int) bool { return waitsLonger(&ts[i], &ts[j]) })
	}
	byUpdate(sum.Stale)
	byUpdate(sum.StuckAcquired)
	sort.Slice(sum.Invalid, func(i, j int) bool { return sum.Invalid[i].ID < sum.Invalid[j].ID })
	if len(sum.Stale) > o.MaxListed {
		sum.Stale = sum.Stale[:o.MaxListed]
	}
	if len(sum.StuckAcquired) > o.MaxListed {
		sum.StuckAcquired = sum.StuckAcquired[:o.MaxListed]
	}
	return sum, nil
}

// countByID counts ts as a read by ID shows them (each as scanned when the
// read does not show it).
func (a *admin) countByID(ctx context.Context, sum *state.Summary, ts []state.Transfer, now time.Time, o state.SummaryOptions) error {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	docs, err := a.db.readKeysAsStored(ctx, ids)
	if err != nil {
		return err
	}
	for i := range ts {
		t := &ts[i]
		if raw, ok := docs[t.ID]; ok {
			if cur, err := decode(raw); err == nil && cur.User == o.User {
				t = &cur
			}
		}
		count(sum, t, now, o)
	}
	return nil
}

func count(sum *state.Summary, t *state.Transfer, now time.Time, o state.SummaryOptions) {
	sum.Total++
	sum.ByState[t.State]++
	bump(sum.ByLink, t.Link(), t.State)
	bump(sum.ByUser, t.User, t.State)
	switch t.State {
	case state.StateFailed:
		sum.ByErrorClass[state.FailureClass(t.ErrorClass)]++
	case state.StateNew:
		if sum.OldestWaiting == nil || waitsLonger(t, sum.OldestWaiting) {
			c := *t
			sum.OldestWaiting = &c
		}
	case state.StateSubmitted:
		if t.LastUpdate.Before(now.Add(-o.StaleAfter)) {
			sum.Stale = append(sum.Stale, *t)
		}
	case state.StateAcquired:
		if !t.LeaseExpires.After(now) {
			sum.StuckAcquired = append(sum.StuckAcquired, *t)
		}
	}
}

func bump(m map[string]map[state.State]int, k string, st state.State) {
	if m[k] == nil {
		m[k] = map[state.State]int{}
	}
	m[k][st]++
}

// waitsLonger orders transfers by how long they have been in their state:
// oldest last_update first, then ID.
func waitsLonger(a, b *state.Transfer) bool {
	if !a.LastUpdate.Equal(b.LastUpdate.Time) {
		return a.LastUpdate.Before(b.LastUpdate.Time)
	}
	return a.ID < b.ID
}
