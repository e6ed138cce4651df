package couch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// resolver reads transfer documents by ID and resolves, by the rules of
// conflicts.go, the conflicted ones of the agent's user as it reads them;
// an operator's sweep (resolver_sweep.go) resolves and deletes the leaves
// of the whole database. It knows who its credentials are once a conflict
// needed it.
type resolver struct {
	db    *db
	locks *locker // the sweep gives ties to the holder of a user's live lock
	agent state.Agent
	by    string
	now   func() time.Time
	// ident: who the credentials are, once a conflict needed it
	ident struct {
		mu    sync.Mutex
		known bool
		id    Identity
	}
}

// readKeys reads transfer documents by ID (db.readKeys); conflicted
// transfers of an agent's user are resolved first (resolve), with one
// _bulk_get and one _bulk_docs for all of them, and left out if they
// cannot be.
func (rv *resolver) readKeys(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	return rv.readKeysBeside(ctx, ids, nil)
}

// readKeysBeside is readKeys of ids, with the documents of have (ID ->
// document with its _conflicts, read by a view's include_docs) added: the
// conflicted ones of both are resolved together.
func (rv *resolver) readKeysBeside(ctx context.Context, ids []string, have map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out, conflicted := make(map[string]json.RawMessage, len(ids)+len(have)), map[string]json.RawMessage{}
	if len(ids) > 0 {
		var err error
		if out, conflicted, err = rv.db.readKeys(ctx, ids); err != nil {
			return nil, err
		}
	}
	for id, raw := range have {
		if hasConflicts(raw) {
			conflicted[id] = raw
		} else {
			out[id] = raw
		}
	}
	if len(conflicted) > 0 {
		if err := rv.resolve(ctx, conflicted, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resolve resolves the conflicted documents of conflicted (ID ->
// raw winner with _conflicts) that are transfers of the agent's user and
// puts their resolved bodies into out, with one _bulk_get and one
// _bulk_docs for all; those it cannot resolve are left out of out, so that
// nothing acts on a revision that may lose. A document whose conflicts were
// all superseded already goes into out as it is; other documents, and all
// of them when the store's credentials may not resolve, go into out as
// read.
func (rv *resolver) resolve(ctx context.Context, conflicted map[string]json.RawMessage, out map[string]json.RawMessage) error {
	user := rv.agent.User
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
	if ok, err := rv.mayResolve(ctx); err != nil || !ok {
		for _, j := range jobs {
			out[j.id] = conflicted[j.id]
		}
		return err
	}
	ids, docs, err := rv.resolutions(ctx, jobs, rv.agent.Owner)
	if err != nil {
		return err
	}
	res, _, err := rv.db.bulkDocs(ctx, ids, docs)
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
func (rv *resolver) resolutions(ctx context.Context, jobs []*conflictJob, holder string) ([]string, []any, error) {
	var refs []kivik.BulkGetReference
	for _, j := range jobs {
		for _, r := range j.pending {
			refs = append(refs, kivik.BulkGetReference{ID: j.id, Rev: r})
		}
	}
	losers, err := rv.db.readRevs(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	now := state.At(rv.now())
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
		t := resolved(j.leaves, kept, j.superseded, rv.by, now)
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
func (rv *resolver) mayResolve(ctx context.Context) (bool, error) {
	rv.ident.mu.Lock()
	defer rv.ident.mu.Unlock()
	if !rv.ident.known {
		id, err := rv.db.session(ctx)
		if err != nil {
			return false, err
		}
		rv.ident.id, rv.ident.known = id, true
	}
	return rv.ident.id.AnyOf(RoleAgent, RoleOperator), nil
}
