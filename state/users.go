package state

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// UserLister is an optional ability of a Store, found with As:
// finding, in one query, the users that have work due, so that one command
// can run an agent for each of them (`aso run --all-users`) without asking
// the store once per user.
type UserLister interface {
	// DueUsers returns every user with work due at now, in one backend
	// query: new transfers whose retry_after has passed (and, where the
	// backend can tell, whose dependencies are met), acquired transfers
	// whose lease has expired, and submitted transfers to monitor and
	// record. Each user's run lock is read in the same query. The users come oldest Since first, then by name (SortDue).
	// Users with nothing due are left out. Errors are those of the
	// backend's reads (the store could not be reached).
	DueUsers(ctx context.Context, now time.Time) ([]UserDue, error)
}

// UserDue is one user with due work: see UserLister.
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
