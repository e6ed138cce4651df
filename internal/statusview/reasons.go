package statusview

import (
	"context"
	"fmt"
	"sort"

	"github.com/asyncstageout/aso/state"
)

// Reason states of ReasonCount.
const (
	ReasonFailed   = "failed"
	ReasonRetrying = "retrying"
)

// ReasonCount counts transfers by the class of their last failure reason
// (state.ReasonClass) and its error class: failed ones, and new ones
// waiting to be retried.
type ReasonCount struct {
	Reason     string `json:"reason"`
	State      string `json:"state"` // ReasonFailed or ReasonRetrying
	Count      int    `json:"count"`
	ErrorClass string `json:"error_class,omitempty"`
}

// FailureReasons reads why user's transfers ("" every user's) failed or
// are being retried, most frequent first, from the store's counts.
func FailureReasons(ctx context.Context, st state.Store, user string) ([]ReasonCount, error) {
	c, err := st.Counts(ctx, state.CountsOptions{User: user})
	if err != nil {
		return nil, fmt.Errorf("status: failure reasons: %w", err)
	}
	return Reasons(c.Groups, nil), nil
}

// Reasons sums the groups that keep a failure reason, across users and
// links, most frequent first: those keep selects (nil: all of them).
func Reasons(groups []state.CountGroup, keep func(*state.CountGroup) bool) []ReasonCount {
	type key struct{ reason, class, state string }
	counts := map[key]int{}
	for i := range groups {
		g := &groups[i]
		if g.Reason == "" || (keep != nil && !keep(g)) {
			continue
		}
		st := ReasonRetrying
		if g.State == state.StateFailed {
			st = ReasonFailed
		}
		counts[key{g.Reason, g.ErrorClass, st}] += g.Count
	}
	out := make([]ReasonCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, ReasonCount{Reason: k.reason, ErrorClass: k.class, State: k.state, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.State != b.State {
			return a.State < b.State
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.ErrorClass < b.ErrorClass
	})
	return out
}
