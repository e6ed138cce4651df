package couch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// Conflicted documents. Writes that reached fewer replicas than the write
// quorum (202 Accepted) or two coordinators of a partitioned cluster may
// leave a document with several leaf revisions; CouchDB picks one as the
// winner on every node but keeps the others, listed in _conflicts, until
// someone deletes them. An agent's store resolves the conflicted transfers
// of its user whenever it reads them (readKeys), by these rules:
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

// resolveConflicts resolves the conflicted documents of conflicted (ID ->
// raw winner with _conflicts) that are transfers of the agent's user and
// puts their resolved bodies into out, with one _bulk_get and one
// _bulk_docs for all; those it cannot resolve are left out of out, so that
// nothing acts on a revision that may lose. A document whose conflicts were
// all superseded already goes into out as it is; other documents, and all
// of them when the store's credentials may not resolve, go into out as
// read.
func (s *Store) resolveConflicts(ctx context.Context, conflicted map[string]json.RawMessage, out map[string]json.RawMessage) error {
	user := s.cfg.Agent.User
	var jobs []*conflictJob
	for id, raw := range conflicted {
		t, err := decode(raw)
		if user == "" || err != nil || t.User != user {
			out[id] = raw // not ours to resolve
			continue
		}
		pending := pendingConflicts(raw)
		if len(pending) == 0 {
			out[id] = withoutConflicts(raw) // decided before
			continue
		}
		jobs = append(jobs, &conflictJob{id: id, leaves: []leaf{{rev: t.Rev, t: t}}, pending: pending,
			superseded: slices.DeleteFunc(supersededOf(raw), func(r string) bool { return !slices.Contains(conflictsOf(raw), r) })})
	}
	if len(jobs) == 0 {
		return nil
	}
	if ok, err := s.mayResolve(ctx); err != nil || !ok {
		for _, j := range jobs {
			out[j.id] = conflicted[j.id]
		}
		return err
	}
	ids, docs, err := s.resolutions(ctx, jobs, s.cfg.Agent.Owner)
	if err != nil {
		return err
	}
	res, _, err := s.db.bulkDocs(ctx, ids, docs)
	if err != nil {
		return fmt.Errorf("resolve %d conflicted documents: %w", len(jobs), err)
	}
	for k, r := range res {
		if r.Err != nil {
			continue // a refusal or a conflict: weighed again on the next read
		}
		var m map[string]any
		if json.Unmarshal(docs[k].(json.RawMessage), &m) == nil {
			m["_rev"] = r.Rev
			if b, err := json.Marshal(m); err == nil {
				out[ids[k]] = b
			}
		}
	}
	return nil
}

// resolutions reads the pending leaves of jobs (one _bulk_get) and returns
// the document that ends each conflict, by the rules above with holder as
// the lock's holder.
func (s *Store) resolutions(ctx context.Context, jobs []*conflictJob, holder string) ([]string, []any, error) {
	var refs []kivik.BulkGetReference
	for _, j := range jobs {
		for _, r := range j.pending {
			refs = append(refs, kivik.BulkGetReference{ID: j.id, Rev: r})
		}
	}
	losers, err := s.db.readRevs(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	now := state.At(s.now())
	var ids []string
	var docs []any
	for _, j := range jobs {
		for _, r := range j.pending {
			raw, ok := losers[j.id+"\x00"+r]
			if !ok {
				continue // no longer a leaf, or unreadable: weighed next time
			}
			if t, err := decode(raw); err == nil {
				j.leaves = append(j.leaves, leaf{rev: r, t: t})
			}
		}
		kept := pickLeaf(j.leaves, holder)
		t := resolved(j.leaves, kept, j.superseded, s.by(), now)
		body, err := encode(&t)
		if err != nil {
			continue
		}
		ids, docs = append(ids, j.id), append(docs, body)
	}
	return ids, docs, nil
}

// mayResolve reports whether the store's credentials may write a
// resolution: aso-agent, aso-operator or a server admin (asked of the
// server once, when a conflict first needs it).
func (s *Store) mayResolve(ctx context.Context) (bool, error) {
	s.ident.mu.Lock()
	defer s.ident.mu.Unlock()
	if !s.ident.known {
		id, err := s.db.session(ctx)
		if err != nil {
			return false, err
		}
		s.ident.id, s.ident.known = id, true
	}
	return s.ident.id.AnyOf(RoleAgent, RoleOperator), nil
}
