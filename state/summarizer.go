package state

import (
	"cmp"
	"slices"
	"time"
)

// Summarizer builds a Summary, so that every backend counts and lists
// alike: each transfer counted once (Add, or AddGroup for a group counted
// elsewhere), Invalid, Conflicted and Superseded filled by the backend,
// then Done.
type Summarizer struct {
	Summary
	o            SummaryOptions
	now          time.Time
	oldest       *Transfer
	stale, stuck []*Transfer
}

// NewSummarizer starts the summary of o (with its defaults) at now.
func NewSummarizer(o SummaryOptions, now time.Time) *Summarizer {
	return &Summarizer{o: o.WithDefaults(), now: now, Summary: Summary{
		ByState: map[State]int{}, ByLink: map[string]map[State]int{}, ByUser: map[string]map[State]int{},
		ByErrorClass: map[string]int{}, Invalid: []InvalidDoc{},
	}}
}

// AddGroup counts n transfers of user on link in state st, the failed ones
// under class (FailureClass).
func (s *Summarizer) AddGroup(user, link string, st State, class string, n int) {
	s.Total += n
	s.ByState[st] += n
	addTo(s.ByLink, link, st, n)
	addTo(s.ByUser, user, st, n)
	if st == StateFailed {
		s.ByErrorClass[FailureClass(class)] += n
	}
}

// Add counts t, and keeps it when it is the new transfer that has waited
// longest, a stale submitted one or an acquired one whose lease expired.
// s holds t itself until Done.
func (s *Summarizer) Add(t *Transfer) {
	s.AddGroup(t.User, t.Link(), t.State, t.ErrorClass, 1)
	switch {
	case t.State == StateNew && (s.oldest == nil || waitOrder(t, s.oldest) < 0):
		s.oldest = t
	case t.State == StateSubmitted && t.LastUpdate.Before(s.now.Add(-s.o.StaleAfter)):
		s.stale = append(s.stale, t)
	case t.State == StateAcquired && !t.LeaseExpires.After(s.now):
		s.stuck = append(s.stuck, t)
	}
}

// Done returns the summary: Stale and StuckAcquired the o.MaxListed that
// have waited longest, in that order, each a copyOf the transfer Add kept
// (nil: a plain copy); Invalid by ID.
func (s *Summarizer) Done(copyOf func(*Transfer) Transfer) Summary {
	if copyOf == nil {
		copyOf = func(t *Transfer) Transfer { return *t }
	}
	sum := s.Summary
	if s.oldest != nil {
		c := copyOf(s.oldest)
		sum.OldestWaiting = &c
	}
	list := func(ts []*Transfer) []Transfer {
		slices.SortFunc(ts, waitOrder)
		out := make([]Transfer, 0, min(len(ts), s.o.MaxListed))
		for _, t := range ts[:cap(out)] {
			out = append(out, copyOf(t))
		}
		return out
	}
	sum.Stale, sum.StuckAcquired = list(s.stale), list(s.stuck)
	slices.SortFunc(sum.Invalid, func(a, b InvalidDoc) int { return cmp.Compare(a.ID, b.ID) })
	return sum
}

func addTo(m map[string]map[State]int, k string, st State, n int) {
	if m[k] == nil {
		m[k] = map[State]int{}
	}
	m[k][st] += n
}

// waitOrder orders transfers by how long they have been in their state:
// oldest last_update first, then ID.
func waitOrder(a, b *Transfer) int {
	return cmp.Or(a.LastUpdate.Compare(b.LastUpdate.Time), cmp.Compare(a.ID, b.ID))
}
