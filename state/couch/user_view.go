package couch

import (
	_ "embed"
)

// The views of the design document ViewsID that the per-user commands
// read (see user_map.js and conflicts_map.js): "user", [user, state,
// created, _id] -> null reduced by _count, and "conflicts", [user, _id] ->
// null. They live in the agents' design document, which the agents' own
// queries keep up to date, so that a command's read of one user waits for
// no backlog of other writes.
const (
	viewUser      = "user"
	viewConflicts = "conflicts"
)

var (
	//go:embed user_map.js
	userMapSrc string
	//go:embed conflicts_map.js
	conflictsMapJS string

	userView      = map[string]any{"map": withMicros("user_map.js", userMapSrc), "reduce": "_count"}
	conflictsView = map[string]any{"map": conflictsMapJS}
)
