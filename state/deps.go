package state

import (
	"fmt"
	"strings"
	"time"
)

// DefaultDependencyWait is how long a transfer waits, from its creation,
// for a dependency that is not stored (it may be enqueued later).
const DefaultDependencyWait = 24 * time.Hour

// DepVerdict is what the states of its dependencies mean for a transfer.
type DepVerdict int

// Dependency verdicts.
const (
	DepsReady   DepVerdict = iota // every dependency is done
	DepsWaiting                   // some dependency is not done yet, or unknown within the wait
	DepsFailed                    // the transfer can never run: see the reason
)

// DepNode is what the dependency rules need of a stored transfer.
type DepNode struct {
	State     State
	DependsOn []string
}

// DepGraph maps IDs of stored transfers to their DepNode. A backend fills it
// with the dependencies of the transfers it judges and, for the cycle check,
// with the dependencies of those not terminal, transitively (see Frontier).
type DepGraph map[string]DepNode

// Add records t.
func (g DepGraph) Add(t *Transfer) { g[t.ID] = DepNode{State: t.State, DependsOn: t.DependsOn} }

// Frontier returns the IDs the graph must still know to judge ts: their
// dependencies and, through every known dependency that is not terminal
// and not in known (IDs already looked up and not found), theirs.
func (g DepGraph) Frontier(ts []Transfer, known map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(ids []string)
	walk = func(ids []string) {
		for _, id := range ids {
			if seen[id] || known[id] {
				continue
			}
			seen[id] = true
			n, ok := g[id]
			switch {
			case !ok:
				out = append(out, id)
			case !n.State.Terminal():
				walk(n.DependsOn)
			}
		}
	}
	for i := range ts {
		if !ts[i].KillRequested {
			walk(ts[i].DependsOn)
		}
	}
	return out
}

// Deps is what CheckDeps judges a transfer's dependencies by.
type Deps struct {
	// Node returns the stored transfer with an ID; ok is false if there is
	// none (or it is not known to the caller).
	Node func(id string) (n DepNode, ok bool)
	// Wait is how long an unknown dependency is waited for, from the
	// transfer's creation (0: DefaultDependencyWait).
	Wait time.Duration
}

// Deps returns the Deps of g.
func (g DepGraph) Deps(wait time.Duration) Deps {
	return Deps{Node: func(id string) (DepNode, bool) { n, ok := g[id]; return n, ok }, Wait: wait}
}

// CheckDeps decides whether t may run at now. It fails (with a reason naming
// the dependency) when a dependency ended failed or killed, when t is part of
// a cycle of dependencies (none of them could ever run), or when a
// dependency is still unknown once Wait has passed since t was created; it
// waits while a dependency is not done, or unknown within the wait.
func CheckDeps(t *Transfer, d Deps, now time.Time) (DepVerdict, string) {
	if len(t.DependsOn) == 0 {
		return DepsReady, ""
	}
	wait := d.Wait
	if wait <= 0 {
		wait = DefaultDependencyWait
	}
	v := DepsReady
	var unknown string
	for _, id := range t.DependsOn {
		n, ok := d.Node(id)
		switch {
		case !ok:
			v = DepsWaiting
			if unknown == "" {
				unknown = id
			}
		case n.State == StateFailed || n.State == StateKilled:
			return DepsFailed, fmt.Sprintf("dependency %s is %s", id, n.State)
		case n.State != StateDone:
			v = DepsWaiting
		}
	}
	if v == DepsReady {
		return v, ""
	}
	if cycle := findCycle(t, d); cycle != nil {
		return DepsFailed, "dependency cycle: " + strings.Join(cycle, " -> ")
	}
	if unknown != "" && !now.Before(t.Created.Add(wait)) {
		return DepsFailed, fmt.Sprintf("dependency %s unknown %s after the transfer was created (--dependency-wait %s)", unknown, now.Sub(t.Created.Time).Round(time.Second), wait)
	}
	return DepsWaiting, ""
}

// findCycle returns a path of dependencies from t back to t through
// transfers that are not terminal, or nil.
func findCycle(t *Transfer, d Deps) []string {
	done := map[string]bool{}
	var path []string
	var walk func(id string, deps []string) bool
	walk = func(id string, deps []string) bool {
		path = append(path, id)
		for _, dep := range deps {
			if dep == t.ID {
				path = append(path, dep)
				return true
			}
			if done[dep] {
				continue
			}
			done[dep] = true
			if n, ok := d.Node(dep); ok && !n.State.Terminal() && walk(dep, n.DependsOn) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(t.ID, t.DependsOn) {
		return path
	}
	return nil
}
