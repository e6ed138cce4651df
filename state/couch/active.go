package couch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/asyncstageout/aso/state"
)

// maxJobKeys bounds the jobs ActiveTransfersOf asks for in one request.
const maxJobKeys = 1000

// ActiveJobs lists the FTS jobs of user's submitted transfers with their
// number of transfers, the job with the oldest last_update first (then by
// ID), in one request: the active rows of the view reduced by _stats,
// grouped by job. Within state.StaleClaimWindow of a claim from the head
// of the queue the view is read as the server last indexed it (see
// staleListing), with the jobs of the transfers the store committed itself
// added from memory and those it wrote out of their job since left out: a
// job committed by another writer since waits at most the window.
func (s *Store) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	now := s.now()
	stale := s.staleListing(user)
	var ended map[string]string
	if stale {
		ended = s.written.endedJobs() // before the read: it may show them
	}
	params := map[string]any{
		"startkey": []any{user, keyActive},
		"endkey":   []any{user, keyActive, map[string]any{}},
		"group":    true,
	}
	staleView(params, stale)
	rows, err := workRows(ctx, s.db, params)
	if err != nil {
		return nil, fmt.Errorf("couch: active jobs of %s: %w", user, err)
	}
	if !stale {
		s.written.indexed(now)
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
		if jobs, err = s.leaveOutEnded(ctx, user, jobs, ended); err != nil {
			return nil, fmt.Errorf("couch: active jobs of %s: %w", user, err)
		}
		jobs = s.addWritten(user, jobs)
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
func (s *Store) leaveOutEnded(ctx context.Context, user string, jobs []jobRow, ended map[string]string) ([]jobRow, error) {
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
	rows, err := workRows(ctx, s.db, params)
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
func (s *Store) addWritten(user string, jobs []jobRow) []jobRow {
	at := make(map[string]int, len(jobs))
	for i, j := range jobs {
		at[j.ref.ID] = i
	}
	for id, w := range s.written.jobsOf(user) {
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
func (s *Store) staleListing(user string) bool {
	return user == s.cfg.Agent.User && s.claims.cursor.recent(s.now()) && s.written.complete()
}

// ActiveTransfersOf returns the submitted transfers of user in the given
// jobs, in the order of jobs, each job's transfers by FTS file ID then ID:
// one request (a POST of the view keys) per maxJobKeys jobs.
func (s *Store) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]state.Job, error) {
	byJob := make(map[string][]state.Transfer, len(jobs))
	var keys []any
	for i, j := range jobs {
		if _, ok := byJob[j]; !ok {
			byJob[j] = nil
			keys = append(keys, []string{user, keyActive, j})
		}
		if len(keys) == maxJobKeys || (i == len(jobs)-1 && len(keys) > 0) {
			if err := s.activeOf(ctx, user, keys, byJob); err != nil {
				return nil, fmt.Errorf("couch: active transfers of %s: %w", user, err)
			}
			keys = keys[:0]
		}
	}
	out := []state.Job{}
	for _, j := range jobs {
		ts := byJob[j]
		if len(ts) == 0 {
			continue
		}
		delete(byJob, j)
		state.SortJob(ts)
		out = append(out, state.Job{ID: j, Transfers: ts})
	}
	return out, nil
}

// activeOf reads the submitted transfers of user under keys ([user,
// "active", job]) into byJob.
func (s *Store) activeOf(ctx context.Context, user string, keys []any, byJob map[string][]state.Transfer) error {
	add := func(t state.Transfer) {
		if t.State != state.StateSubmitted || t.User != user {
			return
		}
		if _, asked := byJob[t.FTSJob]; asked {
			byJob[t.FTSJob] = append(byJob[t.FTSJob], t)
		}
	}
	if stale := s.staleListing(user); stale || s.written.size() >= minWrittenRead {
		// most of them were probably written by this store: their IDs, then
		// only the documents that changed since; on a stale view, with the
		// IDs of those the store committed itself
		var mine []string
		if stale {
			mine = s.written.idsIn(user, byJob)
		}
		ids, err := s.activeIDs(ctx, keys, stale, mine)
		if err != nil {
			return err
		}
		ts, err := s.readUnchanged(ctx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if t, ok := ts[id]; ok {
				add(t)
			}
		}
		return nil
	}
	rows, err := workRows(ctx, s.db, map[string]any{"keys": keys, "reduce": false, "include_docs": true})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Doc == nil {
			continue
		}
		if t, err := decode(r.Doc); err == nil {
			add(t)
		}
	}
	return nil
}
