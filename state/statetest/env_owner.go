package statetest

import (
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
		if tr := e.get(s, w.ID); g.Adler32 != tr.Checksum() || g.Size != tr.Size {
			e.t.Fatalf("ref %+v: adler32 and size are not the transfer's %q and %d", g, tr.Checksum(), tr.Size)
		}
	}
}
