package couch

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/asyncstageout/aso/state"
)

// DestsID is the design document of the view of transfers by destination
// (DestinationRefs). A design document of its own, so that the agents'
// claims never wait for it to be brought up to date, nor it for theirs.
const DestsID = "_design/" + destsDDoc

// The views of DestsID: by_destination, [destination, destination_lfn]
// -> [state, user, owned, adler32, size, superseded_by,
// dest_owned_since] (see dests_map.js); by_pfn, PFN -> [role, state,
// user] (see pfns_map.js).
const (
	destsDDoc = "aso-dests"
	viewDests = "by_destination"
	viewPFNs  = "by_pfn"
)

var (
	//go:embed dests_map.js
	destsMapJS string
	//go:embed pfns_map.js
	pfnsMapJS string
)

// destsDoc is the design document Init writes (without _rev).
func destsDoc() map[string]any {
	return map[string]any{
		"_id":      DestsID,
		"language": "javascript",
		"views":    map[string]any{viewDests: map[string]any{"map": destsMapJS}, viewPFNs: map[string]any{"map": pfnsMapJS}},
	}
}

// maxDestKeys bounds the destinations asked for in one request.
const maxDestKeys = 1000

// destReader answers DestinationRefs and PFNRefs from the views of
// DestsID.
type destReader struct{ db *db }

// DestinationRefs returns the transfers that name each of dests: one
// POST of the view with the destinations as keys (a request per
// maxDestKeys of them), never a scan of the database. A database that
// aso init has not given the view yet is an error that says to run it.
func (r destReader) DestinationRefs(ctx context.Context, dests []state.Destination) (map[state.Destination][]state.DestRef, error) {
	out := map[state.Destination][]state.DestRef{}
	for len(dests) > 0 {
		n := min(len(dests), maxDestKeys)
		keys := make([]any, n)
		for i, d := range dests[:n] {
			keys[i] = []string{d.Site, d.LFN}
		}
		dests = dests[n:]
		rows, err := r.db.queryView(ctx, destsDDoc, viewDests, map[string]any{"keys": keys})
		if err != nil {
			return nil, fmt.Errorf("couch: transfers by destination (view %s of %s; aso init adds it): %w", viewDests, r.db.url, err)
		}
		for _, row := range rows {
			k, ref, ok := destRow(row)
			if ok && !slices.ContainsFunc(out[k], func(x state.DestRef) bool { return x.ID == ref.ID }) {
				out[k] = append(out[k], ref)
			}
		}
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b state.DestRef) int { return cmp.Compare(a.ID, b.ID) })
	}
	return out, nil
}

// destRow decodes one row of the view; ok is false for a row that is not
// of its form.
func destRow(row viewRow) (state.Destination, state.DestRef, bool) {
	var k []string
	var v []json.RawMessage
	if json.Unmarshal(row.Key, &k) != nil || len(k) != 2 || json.Unmarshal(row.Value, &v) != nil || len(v) < 5 {
		return state.Destination{}, state.DestRef{}, false
	}
	ref := state.DestRef{ID: row.ID}
	var st string
	if json.Unmarshal(v[0], &st) != nil || json.Unmarshal(v[1], &ref.User) != nil || json.Unmarshal(v[2], &ref.Owned) != nil {
		return state.Destination{}, state.DestRef{}, false
	}
	ref.State = state.State(st)
	_ = json.Unmarshal(v[3], &ref.Adler32) // "" when not a string
	_ = json.Unmarshal(v[4], &ref.Size)    // 0 when not a number
	// a view of an older version has neither
	if len(v) > 6 {
		_ = json.Unmarshal(v[5], &ref.SupersededBy)
		_ = json.Unmarshal(v[6], &ref.OwnedSince) // zero when not a time
	}
	return state.Destination{Site: k[0], LFN: k[1]}, ref, true
}

// PFNRefs returns the transfers that recorded each of pfns: one POST of
// the view by PFN with them as keys (a request per maxDestKeys), never a
// scan of the database.
func (r destReader) PFNRefs(ctx context.Context, pfns []string) ([]state.PFNRef, error) {
	var out []state.PFNRef
	seen := map[string]bool{}
	for len(pfns) > 0 {
		n := min(len(pfns), maxDestKeys)
		var keys []any
		for _, p := range pfns[:n] {
			if !seen[p] {
				seen[p] = true
				keys = append(keys, p)
			}
		}
		pfns = pfns[n:]
		if len(keys) == 0 {
			continue
		}
		rows, err := r.db.queryView(ctx, destsDDoc, viewPFNs, map[string]any{"keys": keys})
		if err != nil {
			return nil, fmt.Errorf("couch: transfers by PFN (view %s of %s; aso init adds it): %w", viewPFNs, r.db.url, err)
		}
		var part []state.PFNRef
		for _, row := range rows {
			if ref, ok := pfnRow(row); ok {
				part = append(part, ref)
			}
		}
		// the rows come in the order of the keys; within a key, source
		// first, then by ID
		order := map[string]int{}
		for i, k := range keys {
			order[k.(string)] = i
		}
		slices.SortStableFunc(part, func(a, b state.PFNRef) int {
			return cmp.Or(cmp.Compare(order[a.PFN], order[b.PFN]), -cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID))
		})
		out = append(out, part...)
	}
	return out, nil
}

// pfnRow decodes one row of the view by PFN; ok is false for a row that
// is not of its form.
func pfnRow(row viewRow) (state.PFNRef, bool) {
	var v []string
	ref := state.PFNRef{ID: row.ID}
	if json.Unmarshal(row.Key, &ref.PFN) != nil || json.Unmarshal(row.Value, &v) != nil || len(v) != 3 {
		return state.PFNRef{}, false
	}
	ref.Role, ref.State, ref.User = v[0], state.State(v[1]), v[2]
	return ref, true
}
