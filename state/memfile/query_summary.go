package memfile

import (
	"slices"
	"sort"
	"time"

	"github.com/asyncstageout/aso/state"
)

// attention is what a summary lists beside its counts, as slots of the
// index: the oldest waiting transfer, the stale submitted ones and the
// stuck acquired ones.
type attention struct {
	oldest       int32 // -1: none waits
	stale, stuck []int32
}

// summary counts transfers by state, link, user and error class from the
// index, and reads back only the transfers it lists (see
// state.Admin.Summary); o has its defaults.
func (q query) summary(o state.SummaryOptions, now time.Time) (state.Summary, error) {
	d := q.d
	sum := state.Summary{ByState: map[state.State]int{}, ByLink: map[string]map[state.State]int{}, ByUser: map[string]map[state.State]int{},
		ByErrorClass: map[string]int{},
		Stale:        []state.Transfer{}, StuckAcquired: []state.Transfer{}, Invalid: []state.InvalidDoc{}}
	a := q.count(&sum, o, now)
	var err error
	if a.oldest >= 0 {
		ts, rerr := q.x.readAll([]int32{a.oldest})
		if err = rerr; err == nil {
			sum.OldestWaiting = &ts[0]
		}
	}
	if err == nil {
		sum.Stale, err = q.oldest(a.stale, o.MaxListed)
	}
	if err == nil {
		sum.StuckAcquired, err = q.oldest(a.stuck, o.MaxListed)
	}
	if err != nil {
		return state.Summary{}, err
	}
	for id, bad := range d.invalid {
		sum.Invalid = append(sum.Invalid, state.InvalidDoc{ID: id, Reason: bad.reason})
	}
	sort.Slice(sum.Invalid, func(i, j int) bool { return sum.Invalid[i].ID < sum.Invalid[j].ID })
	return sum, nil
}

// count adds the counts of o.User's transfers (every user's if "") to
// sum, and returns the slots that need attention at now.
func (q query) count(sum *state.Summary, o state.SummaryOptions, now time.Time) attention {
	d := q.d
	byLink := map[[2]uint32]*[8]int{}
	byUser := map[uint32]*[8]int{}
	a := attention{oldest: -1}
	staleBefore := now.Add(-o.StaleAfter)
	for _, i := range d.candidates(o.User, nil, nil) {
		m := &d.metas[i]
		sum.Total++
		countIn(byLink, [2]uint32{m.src, m.dst}, m.state)
		countIn(byUser, m.user, m.state)
		switch m.State() {
		case state.StateFailed:
			sum.ByErrorClass[d.strs.strs[m.class]]++
		case state.StateNew:
			if a.oldest < 0 || d.waitCmp(m, &d.metas[a.oldest]) < 0 {
				a.oldest = i
			}
		case state.StateSubmitted:
			if fromNanos(m.lastUpdate).Before(staleBefore) {
				a.stale = append(a.stale, i)
			}
		case state.StateAcquired:
			if !fromNanos(m.leaseExpires).After(now) {
				a.stuck = append(a.stuck, i)
			}
		}
	}
	for k, n := range byLink {
		link := d.strs.strs[k[0]] + "->" + d.strs.strs[k[1]]
		sum.ByLink[link] = addCounts(sum.ByLink[link], n)
		addCounts(sum.ByState, n)
	}
	for u, n := range byUser {
		sum.ByUser[d.strs.strs[u]] = addCounts(nil, n)
	}
	return a
}

// oldest reads the first n of slots, oldest last_update first.
func (q query) oldest(slots []int32, n int) ([]state.Transfer, error) {
	d := q.d
	slices.SortFunc(slots, func(a, b int32) int { return d.waitCmp(&d.metas[a], &d.metas[b]) })
	ts, err := q.x.readAll(slots[:min(n, len(slots))])
	if err != nil {
		return nil, err
	}
	return ts, nil
}

func countIn[K comparable](m map[K]*[8]int, k K, st uint8) {
	n := m[k]
	if n == nil {
		n = new([8]int)
		m[k] = n
	}
	n[st]++
}

// addCounts adds counts by state code to m (made if nil) and returns it.
func addCounts(m map[state.State]int, n *[8]int) map[state.State]int {
	if m == nil {
		m = map[state.State]int{}
	}
	for c, k := range n {
		if k > 0 {
			m[state.States[c-1]] += k
		}
	}
	return m
}
