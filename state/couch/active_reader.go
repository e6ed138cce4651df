package couch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

// maxJobKeys bounds the jobs ActiveTransfersOf asks for in one request.
const maxJobKeys = 1000

// activeReader answers the monitor's reads of submitted transfers from the
// active rows of the work view. Within the claim window of its own user's
// queue it reads the view as last indexed and amends it with what the
// store wrote itself (written); the transfers it remembers are read by
// revision only.
type activeReader struct {
	db      *db
	rv      *resolver
	written *written
	cursor  *claimCursor // the claim's: whether it read the head lately
	user    string       // the agent's
	now     func() time.Time
}

// ActiveJobs lists the FTS jobs of user's submitted transfers with their
// number of transfers, the job with the oldest last_update first (then by
// ID), in one request: the active rows of the view reduced by _stats,
// grouped by job. Within state.StaleClaimWindow of a claim from the head
// of the queue the view is read as the server last indexed it (see
// staleListing), with the jobs of the transfers the store committed itself
// added from memory and those it wrote out of their job since left out: a
// job committed by another writer since waits at most the window.
func (a *activeReader) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	now := a.now()
	stale := a.staleListing(user)
	var ended map[string]string
	if stale {
		ended = a.written.endedJobs() // before the read: it may show them
	}
	params := map[string]any{
		"startkey": []any{user, keyActive},
		"endkey":   []any{user, keyActive, map[string]any{}},
		"group":    true,
	}
	staleView(params, stale)
	rows, err := workRows(ctx, a.db, params)
	if err != nil {
		return nil, fmt.Errorf("couch: active jobs of %s: %w", user, err)
	}
	if !stale {
		a.written.indexed(now)
	}
	jobs := make([]jobRow, 0, len(rows))
	for _, r := range rows {
		var k []string
		var v struct {
			Count int     `json:"count"`
			Min   float64 `json:"min"`
		}
		if json.Unmarshal(r.Key, &k) != nil || len(k) != 3 || json.Unmarshal(r.Value, &v) != nil || v.Count == 0 {
			continue
		}
		jobs = append(jobs, jobRow{state.JobRef{ID: k[2], Transfers: v.Count}, v.Min})
	}
	if stale {
		if jobs, err = a.leaveOutEnded(ctx, user, jobs, ended); err != nil {
			return nil, fmt.Errorf("couch: active jobs of %s: %w", user, err)
		}
		jobs = a.addWritten(user, jobs)
	}
	slices.SortFunc(jobs, func(a, b jobRow) int {
		return cmp.Or(cmp.Compare(a.oldest, b.oldest), cmp.Compare(a.ref.ID, b.ref.ID))
	})
	out := make([]state.JobRef, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].ref
	}
	return out, nil
}

// jobRow is a job of ActiveJobs and its oldest last_update (microseconds).
type jobRow struct {
	ref    state.JobRef
	oldest float64
}

// staleView asks a query of params for the view as the server last
// indexed it, from a stable set of shard copies (CouchDB's stale=ok).
func staleView(params map[string]any, stale bool) {
	if stale {
		params["update"] = false
		params["stable"] = true
	}
}

// leaveOutEnded counts again, without the transfers of ended (ID -> job),
// the jobs of a stale listing that have some: their rows' IDs in one
// query of the view as it is, since an index brought up to date by another
// query may no longer hold them. A job left with none is dropped.
func (a *activeReader) leaveOutEnded(ctx context.Context, user string, jobs []jobRow, ended map[string]string) ([]jobRow, error) {
	touched := map[string]bool{}
	for _, j := range ended {
		touched[j] = true
	}
	var keys []any
	for _, j := range jobs {
		if touched[j.ref.ID] {
			keys = append(keys, []string{user, keyActive, j.ref.ID})
		}
	}
	if len(keys) == 0 {
		return jobs, nil
	}
	params := map[string]any{"keys": keys, "reduce": false}
	staleView(params, true)
	rows, err := workRows(ctx, a.db, params)
	if err != nil {
		return nil, err
	}
	left := map[string]int{}
	for _, r := range rows {
		var k []string
		if _, gone := ended[r.ID]; gone || json.Unmarshal(r.Key, &k) != nil || len(k) != 3 {
			continue
		}
		left[k[2]]++
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if touched[j.ref.ID] {
			j.ref.Transfers = left[j.ref.ID]
		}
		if j.ref.Transfers > 0 {
			kept = append(kept, j)
		}
	}
	return kept, nil
}

// addWritten adds to jobs those of the transfers the store committed
// itself and remembers.
func (a *activeReader) addWritten(user string, jobs []jobRow) []jobRow {
	at := make(map[string]int, len(jobs))
	for i, j := range jobs {
		at[j.ref.ID] = i
	}
	for id, w := range a.written.jobsOf(user) {
		oldest := float64(w.oldest.UnixMicro())
		if i, ok := at[id]; ok {
			jobs[i].ref.Transfers = max(jobs[i].ref.Transfers, w.transfers)
			jobs[i].oldest = min(jobs[i].oldest, oldest)
		} else {
			jobs = append(jobs, jobRow{state.JobRef{ID: id, Transfers: w.transfers}, oldest})
		}
	}
	return jobs
}

// staleListing reports whether the monitor's listings of user may read
// the view as it is: user's is the queue the store claims from, within the
// claim window, while the store remembers every submitted transfer it
// wrote since its last listing from an up-to-date view (maxWritten).
func (a *activeReader) staleListing(user string) bool {
	return user == a.user && a.cursor.recent(a.now()) && a.written.complete()
}
