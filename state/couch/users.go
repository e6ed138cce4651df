package couch

import (
	_ "embed"
)

// The view of the design document ViewsID that DueUsers reads: [user,
// kind] -> a time in microseconds since the epoch, reduced by _stats (see
// users_map.js). It lives in the same design document as the work view so
// that a server brings both up to date in one pass over the changes.
const viewUsers = "users"

// The kinds of the users view's keys.
const (
	kindNew      = "new"
	kindDeps     = "deps"
	kindAcquired = "acquired"
	kindActive   = "active"
	kindLock     = "lock"
)

// usersMapSrc is the map function of the users view as written, and
// usersMapJS the function the server runs (see withMicros).
var (
	//go:embed users_map.js
	usersMapSrc string
	usersMapJS  = withMicros("users_map.js", usersMapSrc)
)

// usersView is the definition of the users view in the design document.
var usersView = map[string]any{"map": usersMapJS, "reduce": "_stats"}

// kindStats is the _stats value of one [user, kind] group.
type kindStats struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
}
