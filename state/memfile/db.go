package memfile

import (
	"bytes"
	"strconv"

	"github.com/google/btree"

	"github.com/asyncstageout/aso/state"
)

// userIndex indexes the transfers of one user.
type userIndex struct {
	// queue holds the new and acquired transfers in claim order.
	queue *btree.BTreeG[int32]
	// jobs holds the submitted transfers by FTS job.
	jobs map[uint32]map[int32]struct{}
}

// db is the in-memory state: metas of the transfers, their indexes, the
// invalid documents and the run locks; and the transfers last written or
// read, decoded (cache), which are dropped with the db.
type db struct {
	metas   []meta
	free    []int32
	ids     map[key]int32
	invalid map[string]invalidDoc
	locks   map[string]*state.LockDoc
	users   map[uint32]*userIndex
	strs    strtab
	cache   docCache
}

// newDB returns an empty db whose cache holds at most cacheBytes of
// encoded documents.
func newDB(cacheBytes int) *db {
	return &db{ids: map[key]int32{}, invalid: map[string]invalidDoc{}, locks: map[string]*state.LockDoc{}, users: map[uint32]*userIndex{},
		cache: newDocCache(cacheBytes)}
}

// claimLess orders the queue as state.ClaimLess orders transfers.
func (d *db) claimLess(a, b int32) bool {
	x, y := &d.metas[a], &d.metas[b]
	if x.priority != y.priority {
		return x.priority > y.priority
	}
	if x.lastUpdate != y.lastUpdate {
		return x.lastUpdate < y.lastUpdate
	}
	return bytes.Compare(x.id[:], y.id[:]) < 0
}

func (d *db) user(u uint32) *userIndex {
	ui := d.users[u]
	if ui == nil {
		ui = &userIndex{queue: btree.NewG(32, d.claimLess), jobs: map[uint32]map[int32]struct{}{}}
		d.users[u] = ui
	}
	return ui
}

// userOf returns the index of user u, or nil if u has no transfer.
func (d *db) userOf(u string) *userIndex {
	id, ok := d.strs.ids[u]
	if !ok {
		return nil
	}
	return d.users[id]
}

func inQueue(s state.State) bool { return s == state.StateNew || s == state.StateAcquired }

// lookup returns the slot of the valid transfer with id.
func (d *db) lookup(id string) (int32, bool) {
	k, ok := keyOf(id)
	if !ok {
		return 0, false
	}
	i, ok := d.ids[k]
	return i, ok
}

func (d *db) index(i int32) {
	m := &d.metas[i]
	ui := d.user(m.user)
	switch st := m.State(); {
	case inQueue(st):
		ui.queue.ReplaceOrInsert(i)
	case st == state.StateSubmitted:
		set := ui.jobs[m.job]
		if set == nil {
			set = map[int32]struct{}{}
			ui.jobs[m.job] = set
		}
		set[i] = struct{}{}
	}
}

func (d *db) unindex(i int32) {
	m := &d.metas[i]
	ui := d.user(m.user)
	switch st := m.State(); {
	case inQueue(st):
		ui.queue.Delete(i)
	case st == state.StateSubmitted:
		delete(ui.jobs[m.job], i)
		if len(ui.jobs[m.job]) == 0 {
			delete(ui.jobs, m.job)
		}
	}
}

// put stores t, encoded in the file at sp, replacing any document with its
// ID. t must be valid (its ID a transfer ID); it is not kept.
func (d *db) put(t *state.Transfer, sp span) {
	k, ok := keyOf(t.ID)
	if !ok {
		panic("memfile: storing a transfer with ID " + strconv.Quote(t.ID))
	}
	m := meta{
		id: k, at: sp, priority: int64(t.Priority),
		lastUpdate: nanos(t.LastUpdate), retryAfter: nanos(t.RetryAfter), leaseExpires: nanos(t.LeaseExpires), created: nanos(t.Created),
		user: d.strs.id(t.User), src: d.strs.id(t.Source), dst: d.strs.id(t.Destination), state: stateCode(t.State),
		deps: len(t.DependsOn) > 0 && !t.KillRequested,
	}
	switch t.State {
	case state.StateSubmitted:
		m.job = d.strs.id(t.FTSJob)
	case state.StateFailed:
		m.class = d.strs.id(state.FailureClass(t.ErrorClass))
	default:
		m.class = d.strs.id(t.ErrorClass)
	}
	m.hasReason = t.State == state.StateFailed || state.Retrying(t)
	i, ok := d.ids[k]
	switch {
	case ok:
		d.unindex(i)
		d.cache.drop(d.metas[i].at) // the version replaced
	case len(d.free) > 0:
		i, d.free = d.free[len(d.free)-1], d.free[:len(d.free)-1]
	default:
		i = int32(len(d.metas))
		d.metas = append(d.metas, meta{})
	}
	d.ids[k] = i
	d.metas[i] = m
	d.index(i)
	delete(d.invalid, t.ID)
}

// putInvalid replaces any document with id by an invalid one, found in the
// file at sp.
func (d *db) putInvalid(id, reason string, sp span) {
	if i, ok := d.lookup(id); ok {
		d.remove(i)
	}
	delete(d.locks, id)
	d.invalid[id] = invalidDoc{reason: reason, at: sp}
}

// remove drops the valid transfer in slot i.
func (d *db) remove(i int32) {
	d.unindex(i)
	d.cache.drop(d.metas[i].at)
	delete(d.ids, d.metas[i].id)
	d.metas[i] = meta{}
	d.free = append(d.free, i)
}

func (d *db) putLock(l *state.LockDoc) {
	delete(d.invalid, l.ID)
	d.locks[l.ID] = l
}
