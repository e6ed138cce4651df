package couch

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kivik/kivik/v4"

	"github.com/asyncstageout/aso/state"
)

// StatsID is the design document of the views fleet-wide monitoring reads
// (Counts). It is a design document of its own, not ViewsID, so that the
// agents' queries never wait for these views to be brought up to date:
// CouchDB updates the views of a design document together, when one of
// them is read.
const StatsID = "_design/" + statsDDoc

// The views of StatsID: "counts", [user, state, link, error class, reason
// class] -> last_update, reduced by _stats (see counts_map.js); "finished",
// [user or null, hour, link, state, minute] -> null, reduced by _count
// (see finished_map.js); "verified", [user, result] -> the time of the
// last verification that holds, reduced by _stats (see verified_map.js).
const (
	statsDDoc    = "aso-stats"
	viewCounts   = "counts"
	viewFinished = "finished"
	viewVerified = "verified"
)

var (
	//go:embed counts_map.js
	countsMapSrc string
	countsMapJS  = withMicros("counts_map.js", countsMapSrc)
	//go:embed finished_map.js
	finishedMapJS string
	//go:embed verified_map.js
	verifiedMapSrc string
	verifiedMapJS  = withMicros("verified_map.js", verifiedMapSrc)
)

// statsDoc is the design document Init writes (without _rev).
func statsDoc() map[string]any {
	return map[string]any{
		"_id":      StatsID,
		"language": "javascript",
		"views": map[string]any{
			viewCounts:   map[string]any{"map": countsMapJS, "reduce": "_stats"},
			viewFinished: map[string]any{"map": finishedMapJS, "reduce": "_count"},
			viewVerified: map[string]any{"map": verifiedMapJS, "reduce": "_stats"},
		},
	}
}

// statsReader reads the views of StatsID: four queries, whatever the
// number of users and transfers.
type statsReader struct {
	db *db
}

// Counts is state.Admin.Counts.
func (r statsReader) Counts(ctx context.Context, o state.CountsOptions) (state.Counts, error) {
	tally := state.NewTally(o)
	err := r.grouped(ctx, viewCounts, o.User, 5, func(k []string, v kindStats) {
		tally.Add(state.CountKey{User: k[0], State: state.State(k[1]), Link: k[2], ErrorClass: k[3], Reason: k[4]}, v.Count, fromMicros(v.Min))
	})
	if err == nil {
		err = r.grouped(ctx, viewVerified, o.User, 2, func(k []string, v kindStats) {
			tally.AddVerified(k[0], state.VerifyResult(k[1]), v.Count, fromMicros(v.Max))
		})
	}
	// the finished transfers by hour over HoursSince, by minute over MinutesSince
	for _, f := range []struct {
		since time.Time
		level int
	}{{o.HoursSince, 4}, {o.MinutesSince, 5}} {
		if err == nil && !f.since.IsZero() {
			err = r.finished(ctx, o.User, f.since, f.level, tally)
		}
	}
	if err != nil {
		return state.Counts{}, err
	}
	return tally.Counts(), nil
}

// grouped reads view grouped by key, of user ("" every user), and calls
// f with each row whose key has n parts.
func (r statsReader) grouped(ctx context.Context, view, user string, n int, f func(k []string, v kindStats)) error {
	params := map[string]any{"group": true}
	if user != "" {
		params["startkey"], params["endkey"] = []any{user}, []any{user, map[string]any{}}
	}
	rows, err := r.query(ctx, view, params)
	if err != nil {
		return err
	}
	for _, row := range rows {
		var k []string
		var v kindStats
		if json.Unmarshal(row.Key, &k) == nil && len(k) == n && json.Unmarshal(row.Value, &v) == nil {
			f(k, v) // else not a row of this view's shape
		}
	}
	return nil
}

// fromMicros is the time of a view's microseconds, zero for none.
func fromMicros(us float64) time.Time {
	if us <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(us)).UTC()
}

// finished reads the finished view from the hour of since: by hour at
// group_level 4, by minute at 5 (the minutes before since's are dropped).
func (r statsReader) finished(ctx context.Context, user string, since time.Time, level int, tally *state.Tally) error {
	var who any // null: every user's
	if user != "" {
		who = user
	}
	hour := since.UTC().Unix() / 3600
	rows, err := r.query(ctx, viewFinished, map[string]any{
		"group_level": level, "startkey": []any{who, hour}, "endkey": []any{who, map[string]any{}},
	})
	if err != nil {
		return err
	}
	for _, row := range rows {
		var k []json.RawMessage
		var n int
		if json.Unmarshal(row.Key, &k) != nil || len(k) != level || json.Unmarshal(row.Value, &n) != nil {
			continue
		}
		var h, m int64
		var link string
		var st state.State
		if json.Unmarshal(k[1], &h) != nil || json.Unmarshal(k[2], &link) != nil || json.Unmarshal(k[3], &st) != nil {
			continue
		}
		at, per := time.Unix(h*3600, 0), time.Hour
		if level == 5 {
			if json.Unmarshal(k[4], &m) != nil {
				continue
			}
			at, per = time.Unix(m*60, 0), time.Minute
		}
		tally.AddFinished(per, link, st, at, n)
	}
	return nil
}

// query reads the rows of view of StatsID; a missing view is an error
// that says to run aso init.
func (r statsReader) query(ctx context.Context, view string, params map[string]any) ([]viewRow, error) {
	rows, err := r.db.queryView(ctx, statsDDoc, view, params)
	if kivik.HTTPStatus(err) == http.StatusNotFound {
		return nil, fmt.Errorf("couch: counts: %s has no view %s: run aso init to add it: %w", r.db.url, view, err)
	}
	if err != nil {
		return nil, fmt.Errorf("couch: counts: query view %s of %s: %w", view, r.db.url, err)
	}
	return rows, nil
}
