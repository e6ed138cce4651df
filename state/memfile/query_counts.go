package memfile

import (
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// counts counts the transfers for state.Admin.Counts from the index
// alone, but for the reason classes not yet known, which it reads back
// from the file once (listPage transfers at a time) and keeps in the
// index.
func (q query) counts(o state.CountsOptions) (state.Counts, error) {
	d := q.d
	slots := d.candidates(o.User, nil, nil)
	if err := q.learnReasons(slots); err != nil {
		return state.Counts{}, fmt.Errorf("memfile: counts: %w", err)
	}
	tally := state.NewTally(o)
	s := d.strs.strs
	for _, i := range slots {
		m := &d.metas[i]
		link := s[m.src] + "->" + s[m.dst]
		k := state.CountKey{User: s[m.user], State: m.State(), Link: link, ErrorClass: s[m.class], Reason: s[m.reason]}
		at := fromNanos(m.lastUpdate).Time
		tally.Add(k, 1, at)
		if state.Finished(k.State) {
			tally.Finish(link, k.State, at)
		}
	}
	return tally.Counts(), nil
}

// learnReasons sets the reason class of every transfer of slots that
// needs one and does not have it yet.
func (q query) learnReasons(slots []int32) error {
	d := q.d
	var todo []int32
	for _, i := range slots {
		if m := &d.metas[i]; m.hasReason && m.reason == 0 {
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 {
		n := min(len(todo), listPage)
		ts, err := q.x.readAll(todo[:n])
		if err != nil {
			return err
		}
		for k := range ts {
			d.metas[todo[k]].reason = d.strs.id(state.CountKeyOf(&ts[k]).Reason)
		}
		todo = todo[n:]
	}
	return nil
}
