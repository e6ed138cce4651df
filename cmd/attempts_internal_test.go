package cmd

import (
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestSubmissions counts the moves to submitted of a history, not the
// notes that keep the state, and says "or more" of a history that was cut.
func TestSubmissions(t *testing.T) {
	tr := &state.Transfer{History: []state.Transition{
		{From: "", To: state.StateNew}, {From: state.StateNew, To: state.StateAcquired},
		{From: state.StateAcquired, To: state.StateSubmitted}, {From: state.StateSubmitted, To: state.StateSubmitted, Reason: "kill requested"},
		{From: state.StateSubmitted, To: state.StateNew}, {From: state.StateNew, To: state.StateAcquired},
		{From: state.StateAcquired, To: state.StateSubmitted}, {From: state.StateSubmitted, To: state.StateDone},
	}}
	if got := submissionsText(tr); got != "2" {
		t.Errorf("submissions %s, want 2", got)
	}
	for len(tr.History) < state.MaxHistory {
		tr.History = append(tr.History, state.Transition{From: state.StateAcquired, To: state.StateSubmitted})
	}
	if n, atLeast := submissions(tr); !atLeast || n != 2+state.MaxHistory-8 {
		t.Errorf("a full history: %d submissions, at least %v; want %d, at least", n, atLeast, 2+state.MaxHistory-8)
	}
}
