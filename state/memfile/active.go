package memfile

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

// activeJob is an FTS job with submitted transfers of one user.
type activeJob struct {
	id     string
	slots  map[int32]struct{}
	oldest int64 // the oldest last_update of its transfers
}

// activeJobs returns the jobs of user's submitted transfers, the job with
// the oldest last_update first, then by ID.
func (d *db) activeJobs(user string) []activeJob {
	ui := d.userOf(user)
	if ui == nil {
		return nil
	}
	jobs := make([]activeJob, 0, len(ui.jobs))
	for j, set := range ui.jobs {
		a := activeJob{id: d.strs.strs[j], slots: set, oldest: math.MaxInt64}
		for i := range set {
			a.oldest = min(a.oldest, d.metas[i].lastUpdate)
		}
		jobs = append(jobs, a)
	}
	slices.SortFunc(jobs, func(a, b activeJob) int {
		return cmp.Or(cmp.Compare(a.oldest, b.oldest), cmp.Compare(a.id, b.id))
	})
	return jobs
}

// readJobs reads the transfers of jobs, in one pass over the file, each job
// ordered by FTS file ID, then ID.
func (x *tx) readJobs(jobs []activeJob) ([]state.Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	var slots []int32
	for _, j := range jobs {
		for i := range j.slots {
			slots = append(slots, i)
		}
	}
	ts, err := x.readAll(slots)
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

// ActiveJobs lists the FTS jobs of user's submitted transfers, oldest last_update
// first, with their number of submitted transfers. It reads
// nothing from the file.
func (s *Store) ActiveJobs(ctx context.Context, user string) ([]state.JobRef, error) {
	var refs []state.JobRef
	err := s.view(ctx, "active jobs", func(x *tx, _ time.Time) error {
		jobs := x.d.activeJobs(user)
		refs = make([]state.JobRef, len(jobs))
		for i, j := range jobs {
			refs[i] = state.JobRef{ID: j.id, Transfers: len(j.slots)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// ActiveTransfersOf returns the submitted transfers of user in the given
// jobs, each job's by file ID (state.SortJob), in the order of jobs; it reads only
// their documents. A job without submitted transfers of user is left out.
func (s *Store) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]state.Job, error) {
	var out []state.Job
	err := s.view(ctx, "active transfers of jobs", func(x *tx, _ time.Time) error {
		ui := x.d.userOf(user)
		if ui == nil {
			return nil
		}
		var found []activeJob
		seen := map[uint32]bool{}
		for _, name := range jobs {
			j, ok := x.d.strs.ids[name]
			if set := ui.jobs[j]; ok && len(set) > 0 && !seen[j] {
				seen[j] = true
				found = append(found, activeJob{id: name, slots: set})
			}
		}
		var err error
		out, err = x.readJobs(found)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
