package memfile

import (
	"bytes"
	"cmp"
	"math"
	"slices"

	"github.com/asyncstageout/aso/state"
)

// The queries of the index: what the calls select and order before they
// read a document back from the file.

// stub returns a transfer with the fields of m that the rules of package
// state need to select and order transfers without reading them: ID (when
// withID), user, sites, state, priority, FTS job and the times.
func (d *db) stub(m *meta, withID bool) state.Transfer {
	t := state.Transfer{
		User: d.strs.strs[m.user], Source: d.strs.strs[m.src], Destination: d.strs.strs[m.dst],
		State: m.State(), Priority: int(m.priority), FTSJob: d.strs.strs[m.job],
		LastUpdate: fromNanos(m.lastUpdate), RetryAfter: fromNanos(m.retryAfter), LeaseExpires: fromNanos(m.leaseExpires), Created: fromNanos(m.created),
	}
	if withID {
		t.ID = m.id.String()
	}
	return t
}

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

// candidates narrows the search through the indexes: the slots of the
// given IDs, else of the transfers of user (every user if "") in states
// (every state if none).
func (d *db) candidates(user string, states []state.State, ids []string) []int32 {
	var out []int32
	if len(ids) > 0 {
		for _, id := range ids {
			if i, ok := d.lookup(id); ok {
				out = append(out, i)
			}
		}
		return out
	}
	u, known := d.strs.ids[user]
	if user != "" && !known {
		return nil
	}
	var want [8]bool
	for _, st := range states {
		want[stateCode(st)] = true
	}
	for i := range d.metas {
		m := &d.metas[i]
		if m.state != 0 && (user == "" || m.user == u) && (len(states) == 0 || want[m.state]) {
			out = append(out, int32(i))
		}
	}
	return out
}

// listCmp orders transfers as state.ListLess does: oldest created first,
// then ID.
func (d *db) listCmp(a, b *meta) int {
	return cmp.Or(cmp.Compare(a.created, b.created), bytes.Compare(a.id[:], b.id[:]))
}

// waitCmp orders waiting transfers: oldest last_update, then ID.
func (d *db) waitCmp(a, b *meta) int {
	return cmp.Or(cmp.Compare(a.lastUpdate, b.lastUpdate), bytes.Compare(a.id[:], b.id[:]))
}

// linkKey is a link as the string-table ids of its sites.
type linkKey struct{ src, dst uint32 }

func (d *db) linkName(l linkKey) string { return d.strs.strs[l.src] + "->" + d.strs.strs[l.dst] }
