package couch

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/go-kivik/kivik/v4"
)

// ViewsID is the design document of the views the agent's queries read.
const ViewsID = "_design/" + viewsDDoc

// The view of ViewsID: [user, "queue", order] -> due time for
// NewTransfers and the List of a queue, [user, "active", fts_job] ->
// last_update for ActiveTransfers and ActivePager; values in microseconds
// since the epoch, reduced by _stats (see work_map.js). One view rather
// than two, so that a server keeps one index up to date, not two.
const (
	viewsDDoc = "aso-views"
	viewWork  = "work"
	viewPath  = "_design/" + viewsDDoc + "/_view/" + viewWork
	keyQueue  = "queue"
	keyActive = "active"
)

// workMapJS is the map function of the view.
//
//go:embed work_map.js
var workMapJS string

// viewsDoc is the design document Init writes (without _rev).
func viewsDoc() map[string]any {
	return map[string]any{
		"_id":      ViewsID,
		"language": "javascript",
		"views": map[string]any{
			viewWork:      map[string]any{"map": workMapJS, "reduce": "_stats"},
			viewUsers:     usersView,
			viewUser:      userView,
			viewConflicts: conflictsView,
		},
	}
}

// viewRow is one row of a view query: Value, and Doc with include_docs
// (nil for a deleted document).
type viewRow struct {
	ID    string          `json:"id"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
	Doc   json.RawMessage `json:"doc"`
}

// workRows reads the rows of the work view. With "keys" in params it is
// a POST, otherwise a GET.
func workRows(ctx context.Context, d *db, params map[string]any) ([]viewRow, error) {
	rows, err := d.queryView(ctx, viewsDDoc, viewWork, params)
	if err != nil {
		return nil, fmt.Errorf("couch: query view %s of %s: %w", viewWork, d.url, err)
	}
	return rows, nil
}

// rowsOf reads every row of rs, with their documents if docs. A row that
// is an error (a key not found) is left out; a deleted document's Doc is
// nil. A row without a value (_all_docs of a missing key) keeps Value nil.
func rowsOf(rs *kivik.ResultSet, docs bool) ([]viewRow, error) {
	defer rs.Close()
	var rows []viewRow
	for rs.Next() {
		id, err := rs.ID()
		if err != nil {
			continue
		}
		r := viewRow{ID: id}
		if err := rs.ScanKey(&r.Key); err != nil {
			return nil, err
		}
		if err := rs.ScanValue(&r.Value); err != nil {
			return nil, err
		}
		if docs && (rs.ScanDoc(&r.Doc) != nil || string(r.Doc) == "null") {
			r.Doc = nil // deleted
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}

// claimRows reads up to limit rows of user's queue in claim order, after
// the claim key after (nil: from the head of the queue), with their
// documents and their conflicts if docs (read from the shard copy that
// answers, not from a quorum: a cluster's claims read the documents by ID),
// from the view as the server last indexed it if stale
// (update=false: without waiting for the writes since to be indexed). The
// keys are [user, "queue", order], and [user, "queue", after, {}] sorts
// after [user, "queue", after] and before every greater claim key, so that
// a page starts right after the last one even if that transfer has changed
// since.
func claimRows(ctx context.Context, d *db, user string, after json.RawMessage, limit int, docs, stale bool) ([]viewRow, error) {
	start := []any{user, keyQueue}
	if after != nil {
		start = []any{user, keyQueue, after, map[string]any{}}
	}
	params := map[string]any{
		"startkey":     start,
		"endkey":       []any{user, keyQueue, map[string]any{}},
		"limit":        limit,
		"include_docs": docs,
		"reduce":       false,
	}
	if docs {
		params["conflicts"] = true
	}
	staleView(params, stale)
	return workRows(ctx, d, params)
}

// claimKeyOf returns the claim key of a queue row, as JSON.
func claimKeyOf(r viewRow) (json.RawMessage, bool) {
	var k []json.RawMessage
	if json.Unmarshal(r.Key, &k) != nil || len(k) != 3 {
		return nil, false
	}
	return k[2], true
}
