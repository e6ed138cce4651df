package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/asyncstageout/aso/state"
)

// ReasonCount counts transfers by the class of their last failure reason
// (state.ReasonClass) and its error class: failed ones, and new ones
// waiting to be retried.
type ReasonCount struct {
	Reason     string `json:"reason"`
	State      string `json:"state"` // "failed" or "retrying"
	Count      int    `json:"count"`
	ErrorClass string `json:"error_class,omitempty"`
}

// failureReasons lists why the user's transfers failed or are being
// retried, most frequent first.
func failureReasons(ctx context.Context, st state.Store, user string) ([]ReasonCount, error) {
	ts, err := st.List(ctx, state.Filter{User: user, States: []state.State{state.StateFailed, state.StateNew}})
	if err != nil {
		return nil, fmt.Errorf("status: failure reasons: %w", err)
	}
	type key struct{ reason, class, state string }
	counts := map[key]int{}
	for i := range ts {
		t := &ts[i]
		switch {
		case t.State == state.StateFailed:
			counts[key{state.ReasonClass(t.Reason), t.ErrorClass, "failed"}]++
		case t.Attempts > 0 && t.Reason != "":
			counts[key{state.ReasonClass(t.Reason), t.ErrorClass, "retrying"}]++
		}
	}
	out := make([]ReasonCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, ReasonCount{Reason: k.reason, ErrorClass: k.class, State: k.state, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].State != out[j].State {
			return out[i].State < out[j].State
		}
		return out[i].Reason < out[j].Reason
	})
	return out, nil
}

func printReasons(w io.Writer, rs []ReasonCount) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "COUNT\tSTATE\tCLASS\tREASON\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.Count, r.State, orDash(r.ErrorClass), r.Reason)
	}
	tw.Flush()
}
