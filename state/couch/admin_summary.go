package couch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Summary counts transfers by state, link and user. Of one user it reads
// that user's rows of views keyed by the user (userSummary); of every user
// it pages through _all_docs, which is also how it finds the documents
// that are not valid transfers.
func (a *admin) Summary(ctx context.Context, o state.SummaryOptions) (state.Summary, error) {
	sum := state.NewSummarizer(o, a.now())
	var err error
	if o.User != "" {
		err = a.userSummary(ctx, o.User, sum)
	} else {
		err = a.scanSummary(ctx, o.Progress, sum)
	}
	if err != nil {
		return state.Summary{}, fmt.Errorf("couch: summary: %w", err)
	}
	return sum.Done(nil), nil
}

// scanSummary is Summary of every user: one pass over _all_docs, telling
// progress of each page.
func (a *admin) scanSummary(ctx context.Context, progress func(int), sum *state.Summarizer) error {
	read := 0
	return a.db.scanAll(ctx, func(raw json.RawMessage) {
		if read++; progress != nil && read%scanPage == 0 {
			progress(read)
		}
		_, kind := classify(raw)
		if kind == kindOther {
			return
		}
		countConflicts(sum, raw)
		t, err := decode(raw)
		if kind == kindUnknown || err != nil {
			sum.Invalid = append(sum.Invalid, invalidDoc(raw, err))
			return
		}
		sum.Add(&t)
	})
}

// countConflicts counts raw as conflicted when it has conflicts an agent
// has not resolved yet, else as superseded when it has set-aside ones.
func countConflicts(sum *state.Summarizer, raw json.RawMessage) {
	switch {
	case !hasConflicts(raw):
	case len(pendingConflicts(raw)) > 0:
		sum.Conflicted++
	default:
		sum.Superseded++
	}
}
