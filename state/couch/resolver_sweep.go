package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// ConflictReport is what ResolveConflicts did.
type ConflictReport struct {
	// Resolved counts the transfers whose undecided leaves it weighed and
	// resolved (a document written, as an agent writes it).
	Resolved int `json:"resolved"`
	// Deleted counts the leaf revisions it deleted.
	Deleted int `json:"deleted"`
	// Left lists the documents it left with conflicts, each with why.
	Left []string `json:"left"`
}

// resolveBatch bounds the conflicted documents ResolveConflicts handles
// with one round of requests.
const resolveBatch = 500

// ResolveConflicts ends the conflicts of the database (of user's transfers
// and run lock only, when user is not ""): the leaves of a transfer that
// no resolution weighed yet are resolved first, by the agent's rules (see
// conflicts.go; ties go to the owner of the user's live run lock), with one
// write on CouchDB's winner; then every superseded leaf is deleted. A leaf
// whose resolution failed (the document changed meanwhile) is not deleted.
// A run lock's leaves are deleted unless live (held until a time to come):
// a live one is left, and said so. It is an operator's: deleting takes the
// aso-operator role. For one user it reads that user's rows of the
// conflicts view; for every user, one scan of the database; then a
// _bulk_get and two _bulk_docs per resolveBatch conflicted documents.
func (rv *resolver) ResolveConflicts(ctx context.Context, user string) (ConflictReport, error) {
	rep := ConflictReport{Left: []string{}}
	var batch []json.RawMessage
	var failed error
	flush := func() {
		if failed == nil && len(batch) > 0 {
			failed = rv.sweepSome(ctx, batch, &rep)
			batch = batch[:0]
		}
	}
	err := rv.eachConflicted(ctx, user, func(raw json.RawMessage) {
		if failed != nil || !bytes.Contains(raw, []byte(`"_conflicts"`)) || len(conflictsOf(raw)) == 0 {
			return
		}
		var e struct {
			ID   string `json:"_id"`
			User string `json:"user"`
		}
		if json.Unmarshal(raw, &e) != nil || (user != "" && e.User != user) {
			return
		}
		if batch = append(batch, raw); len(batch) == resolveBatch {
			flush()
		}
	})
	flush()
	if err == nil {
		err = failed
	}
	if err != nil {
		return rep, fmt.Errorf("couch: resolve conflicts: %w", err)
	}
	return rep, nil
}

// eachConflicted calls f with each document that may have conflicts, with
// them: of one user, that user's rows of the conflicts view (with their
// documents, a page of resolveBatch at a time); of every user, every
// document of the database.
func (rv *resolver) eachConflicted(ctx context.Context, user string, f func(json.RawMessage)) error {
	if user == "" {
		return rv.db.scanAll(ctx, f)
	}
	start := []any{user}
	for {
		rows, err := rv.db.queryView(ctx, viewsDDoc, viewConflicts, map[string]any{
			"startkey": start, "endkey": []any{user, map[string]any{}}, "include_docs": true, "conflicts": true, "limit": resolveBatch,
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			start = []any{user, r.ID, map[string]any{}}
			if r.Doc != nil {
				f(r.Doc)
			}
		}
		if len(rows) < resolveBatch {
			return nil
		}
	}
}

// sweepSome resolves a batch of conflicted documents (see
// ResolveConflicts).
func (rv *resolver) sweepSome(ctx context.Context, raws []json.RawMessage, rep *ConflictReport) error {
	byUser := map[string][]*conflictJob{}
	var dels []leafRef // leaves to delete whatever the resolutions do
	var locks []json.RawMessage
	for _, raw := range raws {
		e, kind := classify(raw)
		if state.IsLockID(e.ID) {
			locks = append(locks, raw)
			continue
		}
		t, err := decode(raw)
		if kind != kindTransfer || err != nil {
			rep.Left = append(rep.Left, fmt.Sprintf("%s: not a transfer aso can read (%v): resolve it by hand", e.ID, err))
			continue
		}
		superseded := slices.DeleteFunc(supersededOf(raw), func(r string) bool { return !slices.Contains(conflictsOf(raw), r) })
		for _, r := range superseded {
			dels = append(dels, leafRef{t.ID, r})
		}
		if pending := pendingConflicts(raw); len(pending) > 0 {
			byUser[t.User] = append(byUser[t.User], &conflictJob{id: t.ID, leaves: []leaf{{rev: t.Rev, t: t}}, pending: pending, superseded: superseded})
		}
	}
	resolvedDels, err := rv.writeResolutions(ctx, byUser, rep)
	if err != nil {
		return err
	}
	lockDels, err := rv.deadLockLeaves(ctx, locks, rep)
	if err != nil {
		return err
	}
	return rv.deleteLeaves(ctx, slices.Concat(dels, resolvedDels, lockDels), rep)
}

// leafRef names a leaf revision of a document.
type leafRef struct{ id, rev string }

// writeResolutions writes the resolutions of jobs (by user: ties go to the
// holder of the user's live run lock) with one _bulk_docs, and returns the
// leaves they superseded, those of the resolutions written only.
func (rv *resolver) writeResolutions(ctx context.Context, byUser map[string][]*conflictJob, rep *ConflictReport) ([]leafRef, error) {
	var ids []string
	var docs []any
	for user, jobs := range byUser {
		holder := ""
		if d, _, ok, err := rv.locks.read(ctx, user); err != nil {
			return nil, err
		} else if ok && d.Expire.After(rv.now()) {
			holder = d.Holder
		}
		i, d, err := rv.resolutions(ctx, jobs, holder)
		if err != nil {
			return nil, err
		}
		ids, docs = append(ids, i...), append(docs, d...)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	res, _, err := rv.db.bulkDocs(ctx, ids, docs)
	if err != nil {
		return nil, err
	}
	var out []leafRef
	for k, r := range res {
		if r.Err != nil {
			rep.Left = append(rep.Left, fmt.Sprintf("%s: the resolution was not written (%v): run again", ids[k], r.Err))
			continue
		}
		rep.Resolved++
		for _, rev := range supersededOf(docs[k].(json.RawMessage)) {
			out = append(out, leafRef{ids[k], rev})
		}
	}
	return out, nil
}

// deadLockLeaves returns the conflicting leaves of lock documents that are
// released or expired; a live one is reported left.
func (rv *resolver) deadLockLeaves(ctx context.Context, locks []json.RawMessage, rep *ConflictReport) ([]leafRef, error) {
	var refs []kivik.BulkGetReference
	for _, raw := range locks {
		e, _ := classify(raw)
		for _, r := range conflictsOf(raw) {
			refs = append(refs, kivik.BulkGetReference{ID: e.ID, Rev: r})
		}
	}
	leaves, err := rv.db.readRevs(ctx, refs)
	if err != nil {
		return nil, err
	}
	var out []leafRef
	for _, ref := range refs {
		raw, ok := leaves[ref.ID+"\x00"+ref.Rev]
		if !ok {
			continue
		}
		var d state.LockDoc
		if json.Unmarshal(raw, &d) == nil && d.Holder != "" && d.Expire.After(rv.now()) {
			rep.Left = append(rep.Left, fmt.Sprintf("%s: leaf %s is held by %q until %s: run again once it has expired", ref.ID, ref.Rev, d.Holder, d.Expire))
			continue
		}
		out = append(out, leafRef{ref.ID, ref.Rev})
	}
	return out, nil
}

// deleteLeaves deletes leaf revisions with one _bulk_docs.
func (rv *resolver) deleteLeaves(ctx context.Context, leaves []leafRef, rep *ConflictReport) error {
	if len(leaves) == 0 {
		return nil
	}
	ids := make([]string, len(leaves))
	docs := make([]any, len(leaves))
	for i, l := range leaves {
		ids[i], docs[i] = l.id, map[string]any{"_id": l.id, "_rev": l.rev, "_deleted": true}
	}
	res, _, err := rv.db.bulkDocs(ctx, ids, docs)
	if err != nil {
		return err
	}
	var failed []string
	for k, r := range res {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s %s (%v)", leaves[k].id, leaves[k].rev, r.Err))
			continue
		}
		rep.Deleted++
	}
	if len(failed) > 0 {
		rep.Left = append(rep.Left, "leaves not deleted: "+strings.Join(failed, "; "))
	}
	return nil
}
