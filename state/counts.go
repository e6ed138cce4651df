package state

import (
	"cmp"
	"slices"
	"time"
)

// CountKey is a group of transfers that Admin.Counts counts together.
type CountKey struct {
	User  string `json:"user"`
	State State  `json:"state"`
	Link  string `json:"link"` // "SRC->DST"
	// ErrorClass is the class Filter.ErrorClass selects the transfer by:
	// FailureClass of a failed transfer's class, the stored class of any
	// other ("" for none).
	ErrorClass string `json:"error_class,omitempty"`
	// Reason is ReasonClass of the last failure of a failed transfer, or
	// of a new one waiting to be retried (attempts > 0 and a reason); ""
	// for any other transfer.
	Reason string `json:"reason,omitempty"`
}

// CountKeyOf returns the group t is counted in.
func CountKeyOf(t *Transfer) CountKey {
	k := CountKey{User: t.User, State: t.State, Link: t.Link(), ErrorClass: t.ErrorClass}
	switch {
	case t.State == StateFailed:
		k.ErrorClass, k.Reason = FailureClass(t.ErrorClass), ReasonClass(t.Reason)
	case Retrying(t):
		k.Reason = ReasonClass(t.Reason)
	}
	return k
}

// Retrying reports whether t is new again after a failure, waiting to be
// retried: it has made attempts and keeps the reason of the last failure.
func Retrying(t *Transfer) bool {
	return t.State == StateNew && t.Attempts > 0 && t.Reason != ""
}

// CountGroup is the number of transfers of one CountKey.
type CountGroup struct {
	CountKey
	Count int `json:"count"`
	// Oldest is the oldest last_update of the group's transfers.
	Oldest time.Time `json:"oldest"`
}

// FinishedCount is the number of transfers on Link that became State
// (done or failed) in the hour or minute that starts at At, going by
// their last_update.
type FinishedCount struct {
	At    time.Time `json:"at"`
	Link  string    `json:"link"`
	State State     `json:"state"`
	Count int       `json:"count"`
}

// CountsOptions parameterise Counts.
type CountsOptions struct {
	// User: count only the transfers of this user ("" every user's).
	User string
	// HoursSince: count the transfers finished since the start of the
	// hour (UTC) of this time, by hour (zero: none).
	HoursSince time.Time
	// MinutesSince: count the transfers finished since the start of the
	// minute of this time, by minute (zero: none).
	MinutesSince time.Time
}

// Counts is what Admin.Counts returns, each slice in the order SortCounts
// gives it.
type Counts struct {
	Groups  []CountGroup    `json:"groups"`
	Hours   []FinishedCount `json:"hours"`
	Minutes []FinishedCount `json:"minutes"`
	// Verified counts the transfers by what their last verification (aso
	// verify) found, while it holds (Transfer.VerifiedAs).
	Verified []VerifiedCount `json:"verified"`
}

// VerifiedCount is the number of User's transfers whose last verification
// found Result, and when the newest of those verifications was made.
type VerifiedCount struct {
	User   string       `json:"user"`
	Result VerifyResult `json:"result"`
	Count  int          `json:"count"`
	Last   time.Time    `json:"last"`
}

// Finished reports whether a transfer in state s counts in
// Counts.Hours and Counts.Minutes.
func Finished(s State) bool { return s == StateDone || s == StateFailed }

// SortCounts puts c in its order: groups by user, state (in the order of
// States), link, error class and reason; finished counts by time, link and
// state.
func SortCounts(c *Counts) {
	slices.SortFunc(c.Groups, func(a, b CountGroup) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(slices.Index(States, a.State), slices.Index(States, b.State)),
			cmp.Compare(a.Link, b.Link), cmp.Compare(a.ErrorClass, b.ErrorClass), cmp.Compare(a.Reason, b.Reason))
	})
	byTime := func(a, b FinishedCount) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Link, b.Link), cmp.Compare(a.State, b.State))
	}
	slices.SortFunc(c.Verified, func(a, b VerifiedCount) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(slices.Index(VerifyResults, a.Result), slices.Index(VerifyResults, b.Result)))
	})
	slices.SortFunc(c.Hours, byTime)
	slices.SortFunc(c.Minutes, byTime)
}

// Tally builds Counts from transfers one at a time, as a backend that
// reads them (or an index of them) does.
type Tally struct {
	o       CountsOptions
	groups  map[CountKey]*CountGroup
	hours   map[FinishedCount]int
	minutes map[FinishedCount]int
	checks  map[VerifiedCount]VerifiedCount // keyed by user and result
}

// NewTally returns an empty Tally for o.
func NewTally(o CountsOptions) *Tally {
	return &Tally{o: o, groups: map[CountKey]*CountGroup{}, hours: map[FinishedCount]int{}, minutes: map[FinishedCount]int{},
		checks: map[VerifiedCount]VerifiedCount{}}
}

// Add counts n transfers of group k whose oldest last_update is oldest.
func (t *Tally) Add(k CountKey, n int, oldest time.Time) {
	g := t.groups[k]
	if g == nil {
		g = &CountGroup{CountKey: k, Oldest: oldest}
		t.groups[k] = g
	}
	g.Count += n
	if oldest.Before(g.Oldest) {
		g.Oldest = oldest
	}
}

// AddVerified counts n transfers of user whose last verification found r,
// the newest of them made at last.
func (t *Tally) AddVerified(user string, r VerifyResult, n int, last time.Time) {
	k := VerifiedCount{User: user, Result: r}
	v := t.checks[k]
	v.User, v.Result, v.Count = user, r, v.Count+n
	if last.After(v.Last) {
		v.Last = last.UTC()
	}
	t.checks[k] = v
}

// Finish counts one transfer on link that became s (done or failed) at,
// by hour and by minute.
func (t *Tally) Finish(link string, s State, at time.Time) {
	t.AddFinished(time.Hour, link, s, at, 1)
	t.AddFinished(time.Minute, link, s, at, 1)
}

// AddFinished counts n transfers on link that became s in the hour (per
// time.Hour) or minute (per time.Minute) of at, if it is not before the
// options' HoursSince or MinutesSince.
func (t *Tally) AddFinished(per time.Duration, link string, s State, at time.Time, n int) {
	m, since := t.hours, t.o.HoursSince
	if per == time.Minute {
		m, since = t.minutes, t.o.MinutesSince
	}
	at = at.UTC().Truncate(per)
	if !since.IsZero() && !at.Before(since.UTC().Truncate(per)) {
		m[FinishedCount{At: at, Link: link, State: s}] += n
	}
}

// Counts returns what was counted, sorted.
func (t *Tally) Counts() Counts {
	c := Counts{Groups: []CountGroup{}, Hours: []FinishedCount{}, Minutes: []FinishedCount{}, Verified: []VerifiedCount{}}
	for _, v := range t.checks {
		c.Verified = append(c.Verified, v)
	}
	for _, g := range t.groups {
		c.Groups = append(c.Groups, *g)
	}
	for k, n := range t.hours {
		k.Count = n
		c.Hours = append(c.Hours, k)
	}
	for k, n := range t.minutes {
		k.Count = n
		c.Minutes = append(c.Minutes, k)
	}
	SortCounts(&c)
	return c
}
