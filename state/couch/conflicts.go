package couch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// Conflicted documents. Writes that reached fewer replicas than the write
// quorum (202 Accepted) or two coordinators of a partitioned cluster may
// leave a document with several leaf revisions; CouchDB picks one as the
// winner on every node but keeps the others, listed in _conflicts, until
// someone deletes them. An agent's store resolves the conflicted transfers
// of its user whenever it reads them (resolver.readKeys), by these rules:
//
//  1. The leaf furthest along wins: done, then killed, then failed, then
//     submitted (an FTS job exists), then acquired with a submit_sid (a
//     submission may have reached FTS), then acquired, then new. A
//     terminal state is never lost, and a done never loses to a failed
//     (e.g. "destination file exists" written after the copy was made).
//  2. Among leaves as far along: the one owned by the run lock's holder
//     (the agent that resolves), then the last updated, then CouchDB's
//     own winner.
//  3. A kill request on any leaf is kept.
//  4. The kept leaf's content is written on CouchDB's winning leaf, which
//     stays the winner, with a history entry "conflict resolved: ..."
//     naming the revisions set aside, and those revisions added to its
//     superseded_revs. The agent deletes nothing (its role may not): a
//     later read weighs only the leaves not yet superseded, so nothing is
//     decided twice, and `aso resolve-conflicts` (ResolveConflicts, an
//     operator's) deletes the superseded leaves.
//
// Documents of other users, locks and documents that do not decode are
// left as they are (aso status counts them), and so are the conflicts a
// store's credentials may not resolve (no aso-agent or aso-operator role).

// supersededField lists, on a transfer document, the leaf revisions a
// resolution weighed and set aside (see rule 4).
const supersededField = "superseded_revs"

// supersededOf returns the superseded_revs of a raw document.
func supersededOf(raw json.RawMessage) []string {
	var d struct {
		Revs []string `json:"superseded_revs"`
	}
	_ = json.Unmarshal(raw, &d)
	return d.Revs
}

// pendingConflicts returns the conflicting revisions of a raw document
// read with conflicts=true that no resolution has set aside yet.
func pendingConflicts(raw json.RawMessage) []string {
	done := supersededOf(raw)
	var out []string
	for _, r := range conflictsOf(raw) {
		if !slices.Contains(done, r) {
			out = append(out, r)
		}
	}
	return out
}

// withoutConflicts returns raw without its _conflicts.
func withoutConflicts(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "_conflicts")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// resolvedReason starts the reason of the history entry of a resolution;
// validate_doc_update recognises it.
const resolvedReason = "conflict resolved"

// leaf is one leaf revision of a conflicted transfer.
type leaf struct {
	rev string
	t   state.Transfer
}

// progressRank orders the leaves of a conflict by rule 1.
func progressRank(t *state.Transfer) int {
	switch t.State {
	case state.StateDone:
		return 6
	case state.StateKilled:
		return 5
	case state.StateFailed:
		return 4
	case state.StateSubmitted:
		return 3
	case state.StateAcquired:
		if t.SubmitSID != "" {
			return 2
		}
		return 1
	}
	return 0
}

// pickLeaf returns the index of the leaf that wins by rules 1 and 2;
// leaves[0] is CouchDB's winner.
func pickLeaf(leaves []leaf, holder string) int {
	best := 0
	for i := 1; i < len(leaves); i++ {
		a, b := &leaves[i].t, &leaves[best].t
		c := cmp.Or(
			cmp.Compare(progressRank(a), progressRank(b)),
			cmp.Compare(boolInt(holder != "" && a.Owner == holder), boolInt(holder != "" && b.Owner == holder)),
			a.LastUpdate.Compare(b.LastUpdate.Time),
		)
		if c > 0 {
			best = i
		}
	}
	return best
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// resolved returns the document that ends the conflict among leaves (kept
// is the index of the winner by pickLeaf; leaves[0] is CouchDB's winner,
// whose revision it is written on), superseding the other leaves besides
// those already in superseded.
func resolved(leaves []leaf, kept int, superseded []string, by string, now state.Time) state.Transfer {
	t := *cloneTransfer(&leaves[kept].t)
	t.Rev = leaves[0].rev
	var set []string
	for i := range leaves {
		if i == kept {
			continue
		}
		l := &leaves[i].t
		set = append(set, fmt.Sprintf("%s (%s, owner %q)", leaves[i].rev, l.State, l.Owner))
		if i > 0 {
			superseded = append(superseded, leaves[i].rev)
		}
		if l.KillRequested && !t.State.Terminal() {
			t.KillRequested = true
		}
	}
	if kept > 0 {
		// the winner's own content is set aside, not its revision
		superseded = append(superseded, leaves[kept].rev)
	}
	reason := t.Reason
	t.Transition(t.State, now.Time, by, fmt.Sprintf("%s: kept revision %s (%s, owner %q); set aside %s",
		resolvedReason, leaves[kept].rev, t.State, t.Owner, strings.Join(set, ", ")))
	t.Reason = reason
	slices.Sort(superseded)
	revs, _ := json.Marshal(slices.Compact(superseded))
	t.Extra = maps.Clone(t.Extra)
	if t.Extra == nil {
		t.Extra = map[string]json.RawMessage{}
	}
	t.Extra[supersededField] = revs
	return t
}

// conflictsOf returns the _conflicts of a raw document read with
// conflicts=true.
func conflictsOf(raw json.RawMessage) []string {
	var d struct {
		Conflicts []string `json:"_conflicts"`
	}
	_ = json.Unmarshal(raw, &d)
	return d.Conflicts
}

// conflictJob is one conflicted transfer to resolve: its leaves (the
// winner first) and the revisions already superseded.
type conflictJob struct {
	id         string
	leaves     []leaf
	superseded []string
	pending    []string
}
