package state

import (
	"cmp"
	"slices"
	"time"
)

// UserDue is one user with due work: see Admin.DueUsers.
type UserDue struct {
	User string `json:"user"`
	// Since is when the oldest of the user's due work became due: the
	// retry_after (or, for a transfer never retried, the creation) of a new
	// transfer, the lease expiry of an acquired one, the last update of a
	// submitted one.
	Since time.Time `json:"since"`
	// Queued counts the user's new and acquired transfers, due or not;
	// Active its submitted ones.
	Queued int `json:"queued"`
	Active int `json:"active"`
	// DepsOnly is set when all the user's due queued transfers have
	// dependencies that the backend did not check in its query (and the
	// user has no active transfer): its agent may find that they all still
	// wait and exit with nothing done. A caller runs such a user once and
	// not again until its entry changes.
	DepsOnly bool `json:"deps_only,omitempty"`
	// LockedUntil is when the user's run lock expires if an agent holds it
	// at now (zero if free): a caller on another host leaves the user to
	// that agent until then.
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// SortDue orders users as DueUsers returns them: oldest Since first, then
// by user name.
func SortDue(us []UserDue) {
	slices.SortFunc(us, func(a, b UserDue) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.User, b.User))
	})
}
