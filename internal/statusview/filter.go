package statusview

import (
	"fmt"
	"github.com/asyncstageout/aso/state"
	"slices"
	"strings"
	"time"
)

// Selection is the filters of `aso list` (and of the lists of `aso
// serve`), as given: each field named after its flag.
type Selection struct {
	States []string // in-state
	Link   string   // link
	LFN    string   // lfn
	FTSJob string   // fts-job
	Class  string   // error-class
	Since  string   // since
	// Verified is a result of aso verify (verified)
	Verified string
}

// SelectionError is a filter given a value it does not take; Name is the
// filter's name (the flag without its dashes).
type SelectionError struct {
	Name, Value, Want string
}

func (e *SelectionError) Error() string { return fmt.Sprintf("%s %q: %s", e.Name, e.Value, e.Want) }

// Any reports whether a filter is given.
func (s *Selection) Any() bool {
	return len(s.States) > 0 || s.Link != "" || s.LFN != "" || s.FTSJob != "" || s.Class != "" || s.Since != "" || s.Verified != ""
}

// Filter checks the selection and returns the state.Filter it selects for
// user ("" every user); since is counted back from now. A bad value is a
// *SelectionError.
func (s *Selection) Filter(user string, now time.Time) (state.Filter, error) {
	f := state.Filter{User: user, FTSJob: s.FTSJob}
	for _, v := range s.States {
		st := state.State(strings.TrimSpace(v))
		if !st.Valid() {
			return f, &SelectionError{"in-state", v, "want one of " + StateNames()}
		}
		if !slices.Contains(f.States, st) {
			f.States = append(f.States, st)
		}
	}
	if s.Link != "" {
		src, dst, ok := strings.Cut(s.Link, "->")
		if !ok || src == "" || dst == "" {
			return f, &SelectionError{"link", s.Link, "want SRC->DST, such as T2_US_Nebraska->T1_DE_KIT"}
		}
		f.Link = s.Link
	}
	if s.LFN != "" {
		if err := state.ValidLFNPattern(s.LFN); err != nil {
			return f, &SelectionError{"lfn", s.LFN, err.Error()}
		}
		f.LFN = s.LFN
	}
	if s.Class != "" {
		if !state.ErrorClass(s.Class).Valid() {
			return f, &SelectionError{"error-class", s.Class, "want one of " + ErrorClassNames()}
		}
		f.ErrorClass = s.Class
	}
	if s.Verified != "" {
		if !state.VerifyResult(s.Verified).Valid() {
			return f, &SelectionError{"verified", s.Verified, "want one of present, missing, differs, unreadable"}
		}
		f.Verified = state.VerifyResult(s.Verified)
	}
	if s.Since != "" {
		t, err := ParseSince(s.Since, now)
		if err != nil {
			return f, err
		}
		f.Since = t
	}
	return f, nil
}

// ParseSince reads a since filter: a positive duration back from now, or
// an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, &SelectionError{"since", s, "want a positive duration (such as 2h) or an RFC 3339 time"}
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &SelectionError{"since", s, "want a duration (such as 2h) or an RFC 3339 time (such as 2026-01-02T15:04:05Z)"}
	}
	return t, nil
}

// StateNames names every state, for messages.
func StateNames() string {
	names := make([]string, len(state.States))
	for i, s := range state.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ErrorClassNames names every error class, for messages.
func ErrorClassNames() string {
	names := make([]string, len(state.ErrorClasses))
	for i, c := range state.ErrorClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}
