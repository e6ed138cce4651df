package memfile

import (
	"slices"

	"github.com/asyncstageout/aso/state"
)

// query answers the calls that only read, within one operation: it
// selects and orders transfers in the index and reads back from the file
// only the documents it returns, or must look at to decide (filters the
// index does not hold, dependencies, reason classes, which it keeps in
// the index). Listings are here, the summary in query_summary.go, the
// counts in query_counts.go, the users with work due in query_due.go.
type query struct {
	x *tx
	d *db
}

func newQuery(x *tx) query { return query{x: x, d: x.d} }

// listPage is how many transfers list reads back at once when it filters
// on their documents.
const listPage = 1000

// list returns the transfers matching f, oldest created first. The index
// selects and orders the candidates; the filters the index does not hold
// (LFN, FTS job, error class) are checked on the documents.
func (q query) list(f state.Filter) ([]state.Transfer, error) {
	d := q.d
	cheap := f
	cheap.LFN, cheap.FTSJob, cheap.ErrorClass = "", "", "" // not in the index: checked below
	withID := len(f.IDs) > 0 || f.IDPrefix != "" || f.After != nil
	var found []int32
	for _, i := range d.candidates(f.User, f.States, f.IDs) {
		if st := d.stub(&d.metas[i], withID); cheap.Matches(&st) {
			found = append(found, i)
		}
	}
	slices.SortFunc(found, func(a, b int32) int { return d.listCmp(&d.metas[a], &d.metas[b]) })
	return q.matching(found, f)
}

// matching reads the transfers of slots, in order, that f matches, up to
// f.Limit. Without a filter on the documents it reads only those it
// returns; otherwise it reads listPage slots at a time.
func (q query) matching(slots []int32, f state.Filter) ([]state.Transfer, error) {
	if f.LFN == "" && f.FTSJob == "" && f.ErrorClass == "" {
		if f.Limit > 0 && len(slots) > f.Limit {
			slots = slots[:f.Limit]
		}
		return q.x.readAll(slots)
	}
	out := []state.Transfer{}
	for len(slots) > 0 && (f.Limit <= 0 || len(out) < f.Limit) {
		n := min(len(slots), listPage)
		ts, err := q.x.readAll(slots[:n])
		if err != nil {
			return nil, err
		}
		slots = slots[n:]
		for i := range ts {
			if f.Matches(&ts[i]) && (f.Limit <= 0 || len(out) < f.Limit) {
				out = append(out, ts[i])
			}
		}
	}
	return out, nil
}

// activeJobs lists the FTS jobs of user's submitted transfers with their
// number of transfers (see db.activeJobs). It reads nothing from the file.
func (q query) activeJobs(user string) []state.JobRef {
	jobs := q.d.activeJobs(user)
	refs := make([]state.JobRef, len(jobs))
	for i, j := range jobs {
		refs[i] = state.JobRef{ID: j.id, Transfers: len(j.slots)}
	}
	return refs
}

// activeTransfersOf returns the submitted transfers of user in jobs (see
// state.AgentStore.ActiveTransfersOf), reading only their documents.
func (q query) activeTransfersOf(user string, jobs []string) ([]state.Job, error) {
	ui := q.d.userOf(user)
	if ui == nil {
		return nil, nil
	}
	var found []activeJob
	seen := map[uint32]bool{}
	for _, name := range jobs {
		j, ok := q.d.strs.ids[name]
		if set := ui.jobs[j]; ok && len(set) > 0 && !seen[j] {
			seen[j] = true
			found = append(found, activeJob{id: name, slots: set})
		}
	}
	return q.jobs(found)
}

// jobs reads the transfers of jobs, in one pass over the file, each job
// ordered by FTS file ID, then ID.
func (q query) jobs(jobs []activeJob) ([]state.Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	var slots []int32
	for _, j := range jobs {
		for i := range j.slots {
			slots = append(slots, i)
		}
	}
	ts, err := q.x.readAll(slots)
	if err != nil {
		return nil, err
	}
	out := make([]state.Job, len(jobs))
	for k, j := range jobs {
		n := len(j.slots)
		job := ts[:n:n]
		ts = ts[n:]
		state.SortJob(job)
		out[k] = state.Job{ID: j.id, Transfers: job}
	}
	return out, nil
}
