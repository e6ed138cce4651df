package memfile

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/asyncstageout/aso/state"
)

// The calls that only read, on what memory holds. A new read is a loop
// over d.docs (or a user's index) with the rules of package state.

// list returns the transfers f matches, oldest created first.
func (d *db) list(f state.Filter) []state.Transfer {
	var found []*state.Transfer
	if len(f.IDs) > 0 {
		seen := map[string]bool{}
		for _, id := range f.IDs {
			if t := d.docs[id]; t != nil && !seen[id] {
				seen[id] = true
				found = append(found, t)
			}
		}
		f.IDs = nil // found by ID: Matches need not look for them again
	} else {
		of := d.of(f.User)
		found = make([]*state.Transfer, 0, len(of))
		for _, t := range of {
			found = append(found, t)
		}
	}
	found = slices.DeleteFunc(found, func(t *state.Transfer) bool { return !f.Matches(t) })
	sort.Slice(found, func(i, j int) bool { return state.ListLess(found[i], found[j]) })
	if f.Limit > 0 && len(found) > f.Limit {
		found = found[:f.Limit]
	}
	return clones(found)
}

// of returns the transfers of user by ID (every user's if ""): a user's
// come from its index, without going through the others'.
func (d *db) of(user string) map[string]*state.Transfer {
	if user == "" {
		return d.docs
	}
	if ui := d.users[user]; ui != nil {
		return ui.all
	}
	return nil
}

// activeJobs lists the FTS jobs of user's submitted transfers with their
// number of transfers, the job with the oldest last_update first, then by
// ID.
func (d *db) activeJobs(user string) []state.JobRef {
	ui := d.users[user]
	if ui == nil {
		return nil
	}
	refs := make([]state.JobRef, 0, len(ui.jobs))
	oldest := map[string]time.Time{}
	for id, set := range ui.jobs {
		refs = append(refs, state.JobRef{ID: id, Transfers: len(set)})
		for _, t := range set {
			if o, ok := oldest[id]; !ok || t.LastUpdate.Before(o) {
				oldest[id] = t.LastUpdate.Time
			}
		}
	}
	slices.SortFunc(refs, func(a, b state.JobRef) int {
		return cmp.Or(oldest[a.ID].Compare(oldest[b.ID]), cmp.Compare(a.ID, b.ID))
	})
	return refs
}

// activeTransfersOf returns the submitted transfers of user in jobs (see
// state.AgentStore.ActiveTransfersOf).
func (d *db) activeTransfersOf(user string, jobs []string) []state.Job {
	ui := d.users[user]
	if ui == nil {
		return nil
	}
	var out []state.Job
	for _, id := range jobs {
		set := ui.jobs[id]
		if len(set) == 0 || slices.ContainsFunc(out, func(j state.Job) bool { return j.ID == id }) {
			continue
		}
		ts := make([]state.Transfer, 0, len(set))
		for _, t := range set {
			ts = append(ts, clone(t))
		}
		state.SortJob(ts)
		out = append(out, state.Job{ID: id, Transfers: ts})
	}
	return out
}

// summary counts the transfers of o.User (every user's if "") by state,
// link, user and error class, and lists those needing attention at now
// (see state.Admin.Summary); o has its defaults.
func (d *db) summary(o state.SummaryOptions, now time.Time) state.Summary {
	sum := state.NewSummarizer(o, now)
	for _, t := range d.of(o.User) {
		sum.Add(t)
	}
	for id, bad := range d.invalid {
		sum.Invalid = append(sum.Invalid, state.InvalidDoc{ID: id, Reason: bad.reason})
	}
	return sum.Done(clone)
}

// counts counts the transfers of o.User (every user's if "") for
// state.Admin.Counts.
func (d *db) counts(o state.CountsOptions) state.Counts {
	tally := state.NewTally(o)
	for _, t := range d.of(o.User) {
		k := state.CountKeyOf(t)
		tally.Add(k, 1, t.LastUpdate.Time)
		if state.Finished(k.State) {
			tally.Finish(k.Link, k.State, t.LastUpdate.Time)
		}
		if v, ok := t.LastVerification(); ok {
			tally.AddVerified(t.User, v.Verified, 1, v.At.Time)
		}
	}
	return tally.Counts()
}

// dueUsers returns the users with work due at now (see
// state.Admin.DueUsers), unsorted: a user with submitted transfers, or
// with a claimable transfer that a claim would claim or settle now (its
// dependencies judged by deps).
func (d *db) dueUsers(now time.Time, deps state.Deps) []state.UserDue {
	var out []state.UserDue
	for user, ui := range d.users {
		if u, ok := d.dueUser(user, ui, now, deps); ok {
			out = append(out, u)
		}
	}
	return out
}

// userWork is state.Admin.UserWork of user, from the user's index.
func (d *db) userWork(user string, now time.Time, deps state.Deps) state.UserWork {
	w := state.UserWork{User: user, ByState: map[state.State]int{}}
	if l := d.locks[state.LockID(user)]; l != nil && l.Expire.After(now) {
		w.LockedUntil = l.Expire.Time
	}
	ui := d.users[user]
	if ui == nil {
		return w
	}
	for _, t := range ui.all {
		w.ByState[t.State]++
	}
	if u, ok := d.dueUser(user, ui, now, deps); ok {
		w.Due = &u
	}
	return w
}

// dueUser returns user as dueUsers lists it, and whether it has work due.
func (d *db) dueUser(user string, ui *userIndex, now time.Time, deps state.Deps) (state.UserDue, bool) {
	u := state.UserDue{User: user, Queued: ui.queue.Len()}
	var since, queueSince time.Time
	earlier := func(p *time.Time, t time.Time) {
		if p.IsZero() || t.Before(*p) {
			*p = t
		}
	}
	for _, set := range ui.jobs {
		u.Active += len(set)
		for _, t := range set {
			earlier(&since, t.LastUpdate.Time)
		}
	}
	ready := false
	ui.queue.Ascend(func(t *state.Transfer) bool {
		if state.Claimable(t, user, now) {
			earlier(&queueSince, waitingSince(t))
			v, _ := state.CheckDeps(t, deps, now)
			ready = ready || t.KillRequested || t.SubmitSID != "" || v != state.DepsWaiting
		}
		return true
	})
	if ready {
		earlier(&since, queueSince)
	}
	if since.IsZero() {
		return u, false
	}
	u.Since = since
	if l := d.locks[state.LockID(user)]; l != nil && l.Expire.After(now) {
		u.LockedUntil = l.Expire.Time
	}
	return u, true
}

// waitingSince is when a queued transfer became due: the lease expiry of
// an acquired one, the retry_after of a retried one, else its creation.
func waitingSince(t *state.Transfer) time.Time {
	switch {
	case t.State == state.StateAcquired:
		return t.LeaseExpires.Time
	case !t.RetryAfter.IsZero():
		return t.RetryAfter.Time
	}
	return t.Created.Time
}

// destinationRefs returns the transfers that name each of dests, from the
// index by destination, each destination's by ID.
func (d *db) destinationRefs(dests []state.Destination) map[state.Destination][]state.DestRef {
	out := map[state.Destination][]state.DestRef{}
	for _, k := range dests {
		if _, done := out[k]; done || len(d.dests[k]) == 0 {
			continue
		}
		refs := make([]state.DestRef, 0, len(d.dests[k]))
		for _, t := range d.dests[k] {
			refs = append(refs, state.RefOf(t))
		}
		slices.SortFunc(refs, func(a, b state.DestRef) int { return cmp.Compare(a.ID, b.ID) })
		out[k] = refs
	}
	return out
}

// pfnRefs returns the transfers that recorded each of pfns as their source
// or destination, from the index by PFN (see state.PFNReader).
func (d *db) pfnRefs(pfns []string) []state.PFNRef {
	var out []state.PFNRef
	seen := map[string]bool{}
	for _, p := range pfns {
		if seen[p] {
			continue
		}
		seen[p] = true
		var refs []state.PFNRef
		for _, t := range d.pfns[p] {
			if t.SourcePFN == p {
				refs = append(refs, state.PFNRef{PFN: p, Role: state.RoleSource, ID: t.ID, User: t.User, State: t.State})
			}
			if t.DestPFN == p {
				refs = append(refs, state.PFNRef{PFN: p, Role: state.RoleDestination, ID: t.ID, User: t.User, State: t.State})
			}
		}
		slices.SortFunc(refs, func(a, b state.PFNRef) int { return cmp.Or(-cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID)) })
		out = append(out, refs...)
	}
	return out
}
