package state

import "time"

// UserWork is what one user has in a store: see Admin.UserWork.
type UserWork struct {
	User string `json:"user"`
	// ByState counts the user's transfers by state, finished ones
	// included: empty for a user who never had a transfer.
	ByState map[State]int `json:"by_state"`
	// Due is the user as DueUsers lists it, nil when none of the user's
	// work is due.
	Due *UserDue `json:"due,omitempty"`
	// LockedUntil is when the user's run lock expires if it is held at
	// now (zero if free).
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// Transfers returns the number of the user's transfers.
func (w UserWork) Transfers() int {
	n := 0
	for _, c := range w.ByState {
		n += c
	}
	return n
}

// Idle reports whether an agent of the user would find nothing to do:
// nothing due, nothing claimed and nothing submitted.
func (w UserWork) Idle() bool {
	return w.Due == nil && w.ByState[StateAcquired] == 0 && w.ByState[StateSubmitted] == 0
}
