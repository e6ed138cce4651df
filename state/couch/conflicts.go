package couch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
//  2. Among leaves as far along: the one owned by the agent that resolves
//     (it holds the user's run lock), then the last updated, then
//     CouchDB's own winner.
//  3. A kill request on any leaf is kept.
//  4. The kept leaf gets a history entry "conflict resolved: ..." naming
//     the revisions discarded, and every other leaf is deleted, in one
//     _bulk_docs per batch.
//
// Documents of other users, locks and documents that do not decode are
// left as they are (aso status counts them).

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
// is the index of the winner by pickLeaf), written on the kept leaf's
// revision.
func resolved(leaves []leaf, kept int, by string, now state.Time) state.Transfer {
	t := *cloneTransfer(&leaves[kept].t)
	t.Rev = leaves[kept].rev
	var lost []string
	for i := range leaves {
		if i == kept {
			continue
		}
		l := &leaves[i].t
		lost = append(lost, fmt.Sprintf("%s (%s, owner %q)", leaves[i].rev, l.State, l.Owner))
		if l.KillRequested && !t.State.Terminal() {
			t.KillRequested = true
		}
	}
	reason := t.Reason
	t.Transition(t.State, now.Time, by, fmt.Sprintf("%s: kept revision %s (%s, owner %q); deleted %s",
		resolvedReason, leaves[kept].rev, t.State, t.Owner, strings.Join(lost, ", ")))
	t.Reason = reason
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

// resolveConflicts resolves the conflicted documents of conflicted (ID ->
// raw winner with _conflicts) that are transfers of the agent's user and
// puts their resolved bodies into out; those it cannot resolve are left
// out of out, so that nothing acts on a revision that may lose. Other
// documents go into out as read.
func (s *Store) resolveConflicts(ctx context.Context, conflicted map[string]json.RawMessage, out map[string]json.RawMessage) error {
	user := s.cfg.Agent.User
	type job struct {
		id     string
		leaves []leaf
	}
	var jobs []*job
	var refs []kivik.BulkGetReference
	for id, raw := range conflicted {
		t, err := decode(raw)
		if user == "" || err != nil || t.User != user {
			out[id] = raw // not ours to resolve
			continue
		}
		j := &job{id: id, leaves: []leaf{{rev: t.Rev, t: t}}}
		jobs = append(jobs, j)
		for _, r := range conflictsOf(raw) {
			refs = append(refs, kivik.BulkGetReference{ID: id, Rev: r})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	losers, err := s.readRevs(ctx, refs)
	if err != nil {
		return err
	}
	now := state.At(s.now())
	var ids []string
	var docs []any
	var bodies []json.RawMessage
	for _, j := range jobs {
		for _, ref := range refs {
			if ref.ID != j.id {
				continue
			}
			raw, ok := losers[ref.ID+"\x00"+ref.Rev]
			if !ok {
				continue // no longer a leaf, or unreadable: it is not deleted
			}
			if t, err := decode(raw); err == nil {
				j.leaves = append(j.leaves, leaf{rev: ref.Rev, t: t})
			}
		}
		kept := pickLeaf(j.leaves, s.cfg.Agent.Owner)
		t := resolved(j.leaves, kept, s.by(), now)
		body, err := encode(&t)
		if err != nil {
			continue
		}
		ids, docs, bodies = append(ids, j.id), append(docs, body), append(bodies, body)
		for i, l := range j.leaves {
			if i != kept {
				ids = append(ids, j.id)
				docs = append(docs, map[string]any{"_id": j.id, "_rev": l.rev, "_deleted": true})
				bodies = append(bodies, nil)
			}
		}
	}
	res, _, err := s.bulkDocs(ctx, ids, docs)
	if err != nil {
		return fmt.Errorf("resolve %d conflicted documents: %w", len(jobs), err)
	}
	for k, r := range res {
		if bodies[k] == nil || r.Err != nil {
			continue // a deletion (a failed one is retried on the next read), or a refusal
		}
		var m map[string]any
		if json.Unmarshal(bodies[k], &m) == nil {
			m["_rev"] = r.Rev
			if b, err := json.Marshal(m); err == nil {
				out[ids[k]] = b
			}
		}
	}
	return nil
}

// readRevs reads given revisions of documents with one _bulk_get; the map
// is keyed by ID + "\x00" + rev.
func (s *Store) readRevs(ctx context.Context, refs []kivik.BulkGetReference) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	err := retryHTTP(ctx, func() error {
		rs := s.db.BulkGet(ctx, refs)
		defer rs.Close()
		for rs.Next() {
			var raw json.RawMessage
			if err := rs.ScanDoc(&raw); err != nil || len(raw) == 0 {
				continue
			}
			var e struct {
				ID      string `json:"_id"`
				Rev     string `json:"_rev"`
				Deleted bool   `json:"_deleted"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Deleted {
				continue
			}
			out[e.ID+"\x00"+e.Rev] = raw
		}
		if err := rs.Err(); err != nil && kivik.HTTPStatus(err) != http.StatusNotFound {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("couch: read %d conflicting revisions from %s: %w", len(refs), s.url, err)
	}
	return out, nil
}
