package statusview

import (
	"encoding/json"
	"github.com/asyncstageout/aso/state"
	"io"
)

// Status is what `aso status --json` prints. Every state appears in
// by_state (and in each link's and user's counts), with 0 when none.
type Status struct {
	User    string                         `json:"user,omitempty"` // empty for every user
	Total   int                            `json:"total"`
	ByState map[state.State]int            `json:"by_state"`
	ByLink  map[string]map[state.State]int `json:"by_link"`
	ByUser  map[string]map[state.State]int `json:"by_user,omitempty"`
	// ByErrorClass counts failed transfers by error class, every class
	// present (0 when none); "unknown" also holds failures not from FTS.
	ByErrorClass  map[string]int     `json:"by_error_class"`
	OldestWaiting *state.Transfer    `json:"oldest_waiting"`
	Stale         []state.Transfer   `json:"stale"`
	StuckAcquired []state.Transfer   `json:"stuck_acquired"`
	Invalid       []state.InvalidDoc `json:"invalid"`
	// Conflicted counts documents with conflicting revisions no agent has
	// decided yet, Superseded those whose set-aside revisions wait for
	// aso resolve-conflicts (CouchDB).
	Conflicted int `json:"conflicted"`
	Superseded int `json:"superseded"`
	// Credential is who the CouchDB credentials of the command that
	// printed it are (aso status), and where they came from.
	Credential *Credential `json:"credential,omitempty"`
	// FailureReasons counts failed and retrying transfers by reason.
	FailureReasons []ReasonCount `json:"failure_reasons"`
	// Locks are the run locks of the user (every user's without one).
	Locks []LockView `json:"locks"`
}

// Credential is who a command's CouchDB credentials are (GET /_session)
// and the setting they came from.
type Credential struct {
	Name   string   `json:"name"`
	Roles  []string `json:"roles"`
	Source string   `json:"source"`
}

// NewStatus returns the Status of user ("" every user) from its summary,
// without failure reasons and locks.
func NewStatus(user string, s state.Summary) Status {
	out := Status{
		User: user, Total: s.Total, ByState: AllStates(s.ByState),
		ByLink: map[string]map[state.State]int{}, OldestWaiting: s.OldestWaiting,
		Stale: NonNil(s.Stale), StuckAcquired: NonNil(s.StuckAcquired), Invalid: NonNil(s.Invalid),
		Conflicted: s.Conflicted, Superseded: s.Superseded, FailureReasons: []ReasonCount{}, ByErrorClass: ErrorClasses(s.ByErrorClass),
		Locks: []LockView{},
	}
	for link, m := range s.ByLink {
		out.ByLink[link] = AllStates(m)
	}
	if user == "" {
		out.ByUser = map[string]map[state.State]int{}
		for u, m := range s.ByUser {
			out.ByUser[u] = AllStates(m)
		}
	}
	return out
}

// ErrorClasses returns the counts of m with every error class present.
func ErrorClasses(m map[string]int) map[string]int {
	out := make(map[string]int, len(state.ErrorClasses))
	for _, c := range state.ErrorClasses {
		out[string(c)] = 0
	}
	for c, n := range m {
		out[c] += n
	}
	return out
}

// AllStates returns the counts of m with every state present.
func AllStates(m map[state.State]int) map[state.State]int {
	out := make(map[state.State]int, len(state.States))
	for _, s := range state.States {
		out[s] = m[s]
	}
	return out
}

// NonNil returns s, or an empty slice for nil (JSON [] rather than null).
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteJSON writes v as indented JSON, leaving <, > and & as they are.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
