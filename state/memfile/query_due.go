package memfile

import (
	"math"
	"time"

	"github.com/asyncstageout/aso/state"
)

// depsProbe bounds the due queued transfers of one user that DueUsers
// reads back from the file to check their dependencies: a user whose
// first depsProbe due transfers all wait is reported DepsOnly.
const depsProbe = 16

// dueUsers returns the users with work due at now, from the index in one
// pass (see state.Admin.DueUsers), unsorted.
func (q query) dueUsers(now time.Time, depWait time.Duration) ([]state.UserDue, error) {
	var out []state.UserDue
	for uid, ui := range q.d.users {
		u, ok, err := q.dueUser(q.d.strs.strs[uid], ui, now, depWait)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// dueUser returns what user has due at now, and whether anything is. It
// walks the user's queue in memory; only due transfers with dependencies
// are read back from the file, at most depsProbe of them, and only when
// the user has no due transfer without.
func (q query) dueUser(user string, ui *userIndex, now time.Time, depWait time.Duration) (state.UserDue, bool, error) {
	u := state.UserDue{User: user, Queued: ui.queue.Len()}
	since := int64(math.MaxInt64)
	for _, set := range ui.jobs {
		u.Active += len(set)
		for i := range set {
			since = min(since, q.d.metas[i].lastUpdate)
		}
	}
	at := now.UnixNano()
	var withDeps []int32
	queueSince, ready := int64(math.MaxInt64), false
	ui.queue.Ascend(func(i int32) bool {
		m := &q.d.metas[i]
		if !claimableAt(m, at) {
			return true
		}
		queueSince = min(queueSince, waitingSince(m))
		if !m.deps {
			ready = true
		} else if !ready && len(withDeps) <= depsProbe {
			withDeps = append(withDeps, i)
		}
		return true
	})
	if !ready && len(withDeps) > 0 {
		var err error
		if ready, err = q.anyReady(withDeps, now, depWait); err != nil {
			return u, false, err
		}
	}
	if ready || (len(withDeps) > depsProbe && u.Active == 0) {
		since = min(since, queueSince)
		u.DepsOnly = !ready
	}
	if since == math.MaxInt64 {
		return u, false, nil
	}
	u.Since = fromNanos(since).Time
	if l := q.d.locks[state.LockID(user)]; l != nil && l.Expire.After(now) {
		u.LockedUntil = l.Expire.Time
	}
	return u, true, nil
}

// claimableAt is state.Claimable on the index entry of a queued transfer
// (the user aside), at time at in nanoseconds: new with retry_after
// passed, or acquired with an expired lease.
func claimableAt(m *meta, at int64) bool {
	switch m.State() {
	case state.StateNew:
		return m.retryAfter <= at
	case state.StateAcquired:
		return m.leaseExpires <= at
	}
	return false
}

// waitingSince is when a queued transfer became due: the lease expiry of
// an acquired one, the retry_after of a retried one, else its creation.
func waitingSince(m *meta) int64 {
	switch {
	case m.State() == state.StateAcquired:
		return m.leaseExpires
	case m.retryAfter != math.MinInt64:
		return m.retryAfter
	}
	return m.created
}

// anyReady reports whether one of the first depsProbe of the due slots can
// be claimed now (every dependency done, or a sid to look up) or would be
// settled by a claim (killed on request, or a dependency failed): work for
// an agent.
func (q query) anyReady(due []int32, now time.Time, depWait time.Duration) (bool, error) {
	ts, err := q.x.readAll(due[:min(len(due), depsProbe)])
	if err != nil {
		return false, err
	}
	deps := q.x.deps(depWait)
	for k := range ts {
		t := &ts[k]
		if t.KillRequested || t.SubmitSID != "" || len(t.DependsOn) == 0 {
			return true, nil // a sid: claimed and looked up whatever its dependencies (state.ReadyToClaim)
		}
		if v, _ := state.CheckDeps(t, deps, now); v != state.DepsWaiting {
			return true, nil
		}
	}
	return false, nil
}
