package statetest

import (
	"strings"

	"github.com/asyncstageout/aso/state"
)

// wantRefs fails unless DestinationRefs of r's destination is want (by ID).
func (e *env) wantRefs(s state.Store, r state.Request, want ...state.DestRef) {
	e.t.Helper()
	k := state.Destination{Site: r.Destination, LFN: r.DestinationLFN}
	refs, err := s.DestinationRefs(ctx, []state.Destination{k, k})
	if err != nil {
		e.t.Fatalf("DestinationRefs: %v", err)
	}
	got := refs[k]
	if len(got) != len(want) || len(refs) > 1 {
		e.t.Fatalf("DestinationRefs(%v) = %+v, want %+v", k, refs, want)
	}
	byID := map[string]state.DestRef{}
	for _, g := range got {
		byID[g.ID] = g
	}
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok || g.User != w.User || g.State != w.State || g.Owned != w.Owned {
			e.t.Fatalf("DestinationRefs(%v): %+v, want %+v", k, got, want)
		}
		if tr := e.get(s, w.ID); g.Adler32 != tr.Checksum() || g.Size != tr.Size || !g.OwnedSince.Equal(tr.DestOwnedSince.Time) ||
			g.SupersededBy != tr.SupersededBy {
			e.t.Fatalf("ref %+v: adler32, size, owned since and superseded by are not the transfer's %q, %d, %s and %q",
				g, tr.Checksum(), tr.Size, tr.DestOwnedSince, tr.SupersededBy)
		}
	}
}

// ownedFinish claims the one new transfer of s, records its ownership
// (PrepareSubmits), submits it and ends it with o.
func (e *env) ownedFinish(s state.Store, o state.Outcome) {
	e.t.Helper()
	ts := e.claim(s, 1)
	res, err := Prepare(ctx, s, ts, "sid-1")
	e.ok("PrepareSubmits", res, err, 1)
	res, err = Commit(ctx, s, commitsOf(e.current(s, ts)), "job-1")
	e.ok("SetTransferIDs", res, err, 1)
	e.ok("SetTerminalState", e.terminal(s, state.Terminal{Transfer: e.get(s, ts[0].ID), Outcome: o, FTSJob: "job-1"}), nil, 1)
}

// enqueueOne enqueues r alone and fails unless its status is want.
func (e *env) enqueueOne(s state.Store, r state.Request, want state.EnqueueStatus) state.EnqueueResult {
	e.t.Helper()
	res, err := s.Enqueue(ctx, []state.Request{r})
	if err != nil || len(res) != 1 || res[0].Status != want {
		e.t.Fatalf("Enqueue: %+v, %v; want one %s", res, err, want)
	}
	return res[0]
}

// wantOwner fails unless c met owner as kind, and the stored transfer's
// first history entry says note.
func (e *env) wantOwner(s state.Store, c state.EnqueueResult, kind state.OwnerKind, owner, note string) {
	e.t.Helper()
	if c.Owner.Kind != kind || c.Owner.Owner.ID != owner || !strings.Contains(c.Owner.Note(), note) {
		e.t.Fatalf("owner check %+v (%q), want kind %d, owner %s, a note with %q", c.Owner, c.Owner.Note(), kind, owner, note)
	}
	if h := e.get(s, c.ID).History; len(h) == 0 || !strings.Contains(h[0].Reason, note) {
		e.t.Fatalf("history %+v: the first entry does not say %q", h, note)
	}
}

// wantSuperseded fails unless the stored transfer id, still in state st,
// names by as the transfer that replaced or superseded it, in
// SupersededBy, in DestinationRefs, and in exactly one history entry that
// starts with prefix and by, its last.
func (e *env) wantSuperseded(s state.Store, id string, st state.State, by, prefix string) {
	e.t.Helper()
	tr := e.get(s, id)
	if tr.State != st || tr.SupersededBy != by {
		e.t.Fatalf("owner %s: state %s, superseded_by %q; want %s and %s", id, tr.State, tr.SupersededBy, st, by)
	}
	n := 0
	for _, h := range tr.History {
		if strings.HasPrefix(h.Reason, state.ReplacedByPrefix) || strings.HasPrefix(h.Reason, state.SupersededByPrefix) {
			n++
		}
	}
	if l := tr.History[len(tr.History)-1]; n != 1 || !strings.HasPrefix(l.Reason, prefix+by) || l.From != st || l.To != st {
		e.t.Fatalf("owner %s history %+v: want one last entry %s -> %s starting %q", id, tr.History, st, st, prefix+by)
	}
	refs, err := s.DestinationRefs(ctx, []state.Destination{tr.Dest()})
	if err != nil {
		e.t.Fatalf("DestinationRefs: %v", err)
	}
	for _, r := range refs[tr.Dest()] {
		if r.ID == id && r.SupersededBy != by {
			e.t.Fatalf("DestinationRefs: %+v, want superseded by %s", r, by)
		}
	}
}
