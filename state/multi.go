package state

import "context"

// MultiOf returns the multi-job ability of ts, in the way database/sql
// finds a driver's optional abilities: the store's own MultiSubmitter when
// it has one, else an adapter that makes one PrepareSubmit or SetTransferID
// call per job, in order (one round trip per job instead of one for all).
//
// PrepareSubmit has no endpoint, so the adapter cannot record
// PrepareJob.Endpoint: it drops it, and the transfers keep FTSEndpoint
// empty, which every reader takes as the agent's own endpoint.
// RecordsEndpoint tells the caller so.
//
// The adapter's calls are not one write. When the first job's call fails
// nothing was written, and the whole call fails with its error. When a
// later job's call fails, the jobs before it were written: the adapter
// returns their results, and the error of that job and every later one
// (not tried) as the Err of each of their items, so a caller never takes
// written items for unwritten ones.
func MultiOf(ts TransferState) MultiSubmitter {
	if m, ok := As[MultiSubmitter](ts); ok {
		return m
	}
	return multiAdapter{ts}
}

// RecordsEndpoint reports whether m records PrepareJob.Endpoint (the
// adapter of MultiOf does not).
func RecordsEndpoint(m MultiSubmitter) bool {
	_, adapted := m.(multiAdapter)
	return !adapted
}

// multiAdapter is the MultiSubmitter of a TransferState without one.
type multiAdapter struct{ ts TransferState }

func (m multiAdapter) PrepareSubmits(ctx context.Context, jobs []PrepareJob) ([][]Result, error) {
	return perJob(len(jobs), func(k int) ([]Result, error) {
		return m.ts.PrepareSubmit(ctx, jobs[k].Transfers, jobs[k].SID)
	}, func(k int) []string { return transferIDs(jobs[k].Transfers) })
}

func (m multiAdapter) SetTransferIDs(ctx context.Context, jobs []CommitJob) ([][]Result, error) {
	return perJob(len(jobs), func(k int) ([]Result, error) {
		return m.ts.SetTransferID(ctx, jobs[k].Commits, jobs[k].JobID)
	}, func(k int) []string {
		ids := make([]string, len(jobs[k].Commits))
		for i := range jobs[k].Commits {
			ids[i] = jobs[k].Commits[i].Transfer.ID
		}
		return ids
	})
}

// perJob calls write for each of n jobs, in order, as MultiOf describes.
func perJob(n int, write func(k int) ([]Result, error), ids func(k int) []string) ([][]Result, error) {
	out := make([][]Result, n)
	for k := range out {
		res, err := write(k)
		if err == nil {
			out[k] = res
			continue
		}
		if k == 0 {
			return nil, err
		}
		for ; k < n; k++ {
			for _, id := range ids(k) {
				out[k] = append(out[k], Result{ID: id, Err: err})
			}
		}
		break
	}
	return out, nil
}

func transferIDs(ts []Transfer) []string {
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	return ids
}
