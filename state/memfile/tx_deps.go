package memfile

import (
	"time"

	"github.com/asyncstageout/aso/state"
)

// deps judges dependencies on the state of x: a dependency's state comes
// from memory; its own dependencies, which the cycle check needs of those
// not terminal, are read from the file once per call.
func (x *tx) deps(wait time.Duration) state.Deps {
	read := map[string][]string{}
	return state.Deps{Wait: wait, Node: func(id string) (state.DepNode, bool) {
		st, ok := x.stateOf(id)
		if !ok {
			return state.DepNode{}, false
		}
		n := state.DepNode{State: st}
		if st.Terminal() {
			return n, true
		}
		if t, staged := x.docs[id]; staged {
			n.DependsOn = t.DependsOn
			return n, true
		}
		deps, seen := read[id]
		if !seen {
			if ts, err := x.load([]string{id}, false); err == nil && ts[0] != nil {
				deps = ts[0].DependsOn
			}
			read[id] = deps
		}
		n.DependsOn = deps
		return n, true
	}}
}
