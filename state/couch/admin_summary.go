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

// Summary counts transfers by state, link and user. Of one user it reads
// that user's rows of views keyed by the user (userSummary); of every user
// it pages through _all_docs, which is also how it finds the documents
// that are not valid transfers.
func (a *admin) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	now := a.now()
	o = o.WithDefaults()
	sum := state.Summary{
		ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
		ByErrorClass: map[string]int{},
		Stale:        []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{},
	}
	var err error
	if o.User != "" {
		err = a.userSummary(ctx, o, now, &sum)
	} else {
		err = a.scanSummary(ctx, o, now, &sum)
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

// scanSummary is Summary of every user: one pass over _all_docs, telling
// o.Progress of each page.
func (a *admin) scanSummary(ctx context.Context, o state.SummaryOptions, now time.Time, sum *state.Summary) error {
	read := 0
	return a.db.scanAll(ctx, func(raw json.RawMessage) {
		if read++; o.Progress != nil && read%scanPage == 0 {
			o.Progress(read)
		}
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
		count(sum, &t, now, o)
	})
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
	bumpBy(m, k, st, 1)
}

// bumpBy adds n to m[k][st].
func bumpBy(m map[string]map[state.State]int, k string, st state.State, n int) {
	if m[k] == nil {
		m[k] = map[state.State]int{}
	}
	m[k][st] += n
}

// waitsLonger orders transfers by how long they have been in their state:
// oldest last_update first, then ID.
func waitsLonger(a, b *state.Transfer) bool {
	if !a.LastUpdate.Equal(b.LastUpdate.Time) {
		return a.LastUpdate.Before(b.LastUpdate.Time)
	}
	return a.ID < b.ID
}
